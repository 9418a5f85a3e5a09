import type { JobStatusName } from "../lib/jobs";

export function StatusBadge({ status }: { status: JobStatusName }) {
  return <span className={`badge badge-${status.toLowerCase()}`}>{status}</span>;
}
