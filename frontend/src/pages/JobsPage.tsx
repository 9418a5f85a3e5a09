import { JobsList } from "../components/JobsList";
import { useLoaded } from "../hooks/useLoaded";
import type { GridSource } from "../lib/source";

/** All jobs, re-read at every new best block. */
export function JobsPage({ source, at }: { source?: GridSource; at?: string }) {
  const { value: jobs, error } = useLoaded(source, at, (s, at) => s.jobs(at));
  if (error) return <p role="alert">Could not read jobs: {error}</p>;
  if (!jobs) return <p aria-busy="true">Loading jobs…</p>;
  return <JobsList jobs={jobs} />;
}
