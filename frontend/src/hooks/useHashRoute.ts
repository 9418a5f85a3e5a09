import { useEffect, useState } from "react";

export type Route =
  | { page: "jobs" }
  | { page: "job"; id: bigint }
  | { page: "create" }
  | { page: "providers" }
  | { page: "provider"; who: string }
  | { page: "register" }
  | { page: "network" }
  | { page: "missing"; path: string };

/**
 * `#/jobs`, `#/jobs/7`, `#/create`, `#/providers`, `#/providers/register`,
 * `#/providers/<ss58 address>`, `#/network`.
 */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, "") || "/jobs";
  if (path === "/" || path === "/jobs") return { page: "jobs" };
  if (path === "/create") return { page: "create" };
  const m = /^\/jobs\/(\d+)$/.exec(path);
  if (m) return { page: "job", id: BigInt(m[1]!) };
  if (path === "/providers") return { page: "providers" };
  if (path === "/providers/register") return { page: "register" };
  if (path === "/network") return { page: "network" };
  const p = /^\/providers\/([1-9A-HJ-NP-Za-km-z]{40,60})$/.exec(path);
  if (p) return { page: "provider", who: p[1]! };
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
