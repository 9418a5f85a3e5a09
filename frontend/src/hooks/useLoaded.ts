import { useEffect, useState } from "react";

/**
 * `read(source, at)` for every new `at` (a block hash) or source, keeping the last value and
 * error; the answer of a call that was superseded meanwhile is dropped. `read` must depend on
 * nothing but its arguments (it is not a dependency of the effect).
 */
export function useLoaded<S, T>(
  source: S | undefined,
  at: string | undefined,
  read: (source: S, at: string) => Promise<T>,
): { value?: T; error?: string } {
  const [value, setValue] = useState<T>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!source || !at) return;
    let live = true;
    read(source, at).then(
      (v) => {
        if (!live) return;
        setValue(v);
        setError(undefined);
      },
      (e: unknown) => live && setError(String(e)),
    );
    return () => {
      live = false;
    };
  }, [source, at]);
  return { value, error };
}
