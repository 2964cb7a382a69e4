import { timingSafeEqual } from "node:crypto";

/** The header a write request carries its token in (`Authorization: Bearer <token>` works too). */
export const TOKEN_HEADER = "x-sqlinbox-token";

/** Why a write is refused, as an HTTP status and a message; `null` when it may go ahead. */
export type WriteRefusal = { readonly status: 401 | 403; readonly message: string } | null;

/**
 * Writes need both the dashboard started with `--allow-writes` and the token: read-only
 * dashboards refuse every write (403), a missing token is 401, a wrong one 403. A header, not a
 * cookie, so another site's page cannot make the browser send it.
 */
export function refuseWrite(writes: { readonly token: string } | null, headers: { get(name: string): string | undefined | null }): WriteRefusal {
  if (writes === null) return { status: 403, message: "this dashboard is read-only: start it with --allow-writes --token <token>" };
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.get("authorization") ?? "")?.[1];
  const given = headers.get(TOKEN_HEADER) ?? bearer;
  if (given === undefined || given === null || given.length === 0)
    return { status: 401, message: `a write needs the token: type it in the page's Token box, or send it in the ${TOKEN_HEADER} header` };
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(writes.token, "utf8");
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { status: 403, message: "the token is wrong" };
  return null;
}
