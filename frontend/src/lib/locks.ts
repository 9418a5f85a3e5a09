// Stake a provider's record locks for jobs (pallet-providers `JobLock`), decoded once for both
// the provider pages (all of a provider's locks) and the job page (each participant's lock for
// that job). Its own module so that jobs.ts and providers.ts share it without importing each
// other.
import type { GridApi } from "./chain";

/**
 * Stake one job locks (`JobLock`): while the provider is a member (`until` undefined), or, once
 * it left, was removed or the job ended, until block `until` (so that its paid rounds can still
 * be challenged and slashed).
 */
export interface JobLockRow {
  job: bigint;
  amount: bigint;
  until?: number;
  /** Open challenges of the provider's work in the job: the lock holds while any is open. */
  disputes: number;
}

type ProviderView = NonNullable<Awaited<ReturnType<GridApi["view"]["Providers"]["provider"]>>>;
type JobLockView = ProviderView["provider"]["jobs"][number];

/** A provider record's job lock as a row. */
export function jobLockRowOf(l: JobLockView): JobLockRow {
  return l.state.type === "Member"
    ? { job: l.job, amount: l.amount, disputes: l.disputes }
    : { job: l.job, amount: l.amount, until: l.state.value, disputes: l.disputes };
}

/**
 * Whether a lock still binds stake at block `now` (`JobLock::binds_at`): a lapsed `Until` lock
 * stays in the record until the registry next prunes it, but no longer holds anything. Without
 * `now` every lock counts as binding.
 */
export function lockBinds(l: JobLockRow, now?: number): boolean {
  return l.disputes > 0 || l.until === undefined || now === undefined || now < l.until;
}

/** A provider record's lock for `job`, or undefined when it has none (or no record). */
export function jobLockIn(view: ProviderView | undefined, job: bigint): JobLockRow | undefined {
  const lock = view?.provider.jobs.find((l) => l.job === job);
  return lock && jobLockRowOf(lock);
}
