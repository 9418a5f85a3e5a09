import { useCallback, useEffect, useRef, useState } from "react";
import type { TxEvent } from "polkadot-api";
import type { Observable, Subscription } from "rxjs";
import { IDLE, nextTxState, txErrorState, type TxState } from "../lib/tx";

/** Runs one transaction at a time and follows it to finality (or failure). */
export function useTx(): {
  state: TxState;
  events: readonly unknown[];
  run: (tx$: Observable<TxEvent>) => void;
} {
  const [state, setState] = useState<TxState>(IDLE);
  const [events, setEvents] = useState<readonly unknown[]>([]);
  const sub = useRef<Subscription | undefined>(undefined);
  useEffect(() => () => sub.current?.unsubscribe(), []);
  const run = useCallback((tx$: Observable<TxEvent>) => {
    sub.current?.unsubscribe();
    setEvents([]);
    setState({ phase: "signing" });
    sub.current = tx$.subscribe({
      next: (ev) => {
        setState((s) => nextTxState(s, ev));
        if ((ev.type === "txBestBlocksState" && ev.found) || ev.type === "finalized") setEvents(ev.events);
      },
      error: (e: unknown) => setState((s) => txErrorState(s, e)),
    });
  }, []);
  return { state, events, run };
}
