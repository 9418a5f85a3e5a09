import { useEffect, useState } from "react";

export type Route = { page: "jobs" } | { page: "job"; id: bigint } | { page: "create" } | { page: "missing"; path: string };

/** `#/jobs`, `#/jobs/7`, `#/create`. */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, "") || "/jobs";
  if (path === "/" || path === "/jobs") return { page: "jobs" };
  if (path === "/create") return { page: "create" };
  const m = /^\/jobs\/(\d+)$/.exec(path);
  if (m) return { page: "job", id: BigInt(m[1]!) };
  return { page: "missing", path };
}

export function useHashRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}
