import { useEffect, useState } from "react";
import { JobsList } from "../components/JobsList";
import type { JobRow } from "../lib/jobs";
import type { GridSource } from "../lib/source";

/** All jobs, re-read at every new best block. */
export function JobsPage({ source, at }: { source?: GridSource; at?: string }) {
  const [jobs, setJobs] = useState<JobRow[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!source || !at) return;
    let live = true;
    source.jobs(at).then(
      (rows) => {
        if (!live) return;
        setJobs(rows);
        setError(undefined);
      },
      (e: unknown) => live && setError(String(e)),
    );
    return () => {
      live = false;
    };
  }, [source, at]);
  if (error) return <p role="alert">Could not read jobs: {error}</p>;
  if (!jobs) return <p aria-busy="true">Loading jobs…</p>;
  return <JobsList jobs={jobs} />;
}
