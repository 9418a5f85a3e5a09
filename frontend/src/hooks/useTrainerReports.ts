import { useEffect, useRef, useState } from "react";
import type { ProviderRow } from "../lib/providers";
import type { TrainerSource } from "../lib/source";
import { readTrainers, type TrainerReport } from "../lib/topology";

/**
 * Every provider's trainer `/status`, read now and every `everyMs` (a poll still running is not
 * doubled); undefined until the first poll answers. Polling restarts only when the set of
 * endpoints changes, not at every block.
 */
export function useTrainerReports(
  source: TrainerSource | undefined,
  providers: Pick<ProviderRow, "who" | "endpoint">[] | undefined,
  everyMs = 5000,
): TrainerReport[] | undefined {
  const [reports, setReports] = useState<TrainerReport[]>();
  const targets = useRef(providers);
  targets.current = providers;
  const key = providers?.map((p) => `${p.who}=${p.endpoint}`).join("\n");
  useEffect(() => {
    if (!source || key === undefined) return;
    let live = true;
    let busy = false;
    const poll = () => {
      const list = targets.current;
      if (busy || !list) return;
      busy = true;
      readTrainers(source, list).then((r) => {
        busy = false;
        if (live) setReports(r);
      });
    };
    poll();
    const timer = setInterval(poll, everyMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [source, key, everyMs]);
  return reports;
}
