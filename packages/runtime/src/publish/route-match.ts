/**
 * Which declared route a published or subscribed name goes to. A route name ending in `*` is a
 * prefix route (`"reports.*"` takes `"reports.daily"`); an exact name beats every prefix, and
 * among prefixes the longest wins, so `"reports.daily.*"` beats `"reports.*"`. `undefined`: no route.
 *
 * @example
 * matchRoute(new Map([["reports.*", a], ["reports.weekly", b]]), "reports.daily") // a
 */
export function matchRoute<T>(routes: ReadonlyMap<string, T>, name: string): T | undefined {
  const exact = routes.get(name);
  if (exact !== undefined) return exact;
  let best: { readonly length: number; readonly value: T } | undefined;
  for (const [route, value] of routes) {
    if (!isPrefixRoute(route)) continue;
    const prefix = route.slice(0, -1);
    if (name.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = { length: prefix.length, value };
  }
  return best?.value;
}

/** `"reports.*"` is a prefix route; its prefix is `"reports."`. */
export function isPrefixRoute(route: string): boolean {
  return route.endsWith("*");
}
