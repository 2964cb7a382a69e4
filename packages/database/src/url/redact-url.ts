/**
 * Query parameters that carry a secret, by a part of their name (any case): `password`, `passwd`,
 * `sslpassword`, `pass`, `pwd`, `secret`, `client_secret`, `token`, `access_token`, `sslkey`,
 * `apikey`, `key`, `credential(s)`. Their values are hidden; other parameters stay readable.
 */
export const SECRET_PARAMETER = /pass|pwd|secret|token|key|credential/i;

const HIDDEN = "***";

/**
 * A URL safe to log and to print: the password of its userinfo and the value of every secret query
 * parameter (`SECRET_PARAMETER`) replaced by `***`. A URL with nothing to hide comes back as it was.
 *
 * @example
 * redactUrl("postgres://app:s3cret@db/app?sslmode=require&password=s3cret")
 * // "postgres://app:***@db/app?sslmode=require&password=***"
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redactUnparsed(url);
  }
  let hidden = false;
  if (parsed.password !== "") {
    parsed.password = HIDDEN;
    hidden = true;
  }
  for (const key of new Set(parsed.searchParams.keys())) {
    if (!SECRET_PARAMETER.test(key)) continue;
    parsed.searchParams.set(key, HIDDEN);
    hidden = true;
  }
  return hidden ? parsed.toString() : url;
}

/**
 * The secret values a URL carries: its userinfo's password and every secret parameter's value, as
 * written and decoded (a driver's message may echo either: `pg` names the `sslkey` file it could not read).
 */
function secretsOf(url: string): string[] {
  const found = new Set<string>();
  const add = (value: string): void => {
    if (value.length === 0) return;
    found.add(value);
    try {
      found.add(decodeURIComponent(value));
    } catch {}
  };
  add(/\/\/[^:@/]*:([^@/]*)@/.exec(url)?.[1] ?? "");
  for (const [, key, value] of url.matchAll(/[?&;]([^=&;#]*)=([^&;#]*)/g)) if (SECRET_PARAMETER.test(key ?? "")) add((value ?? "").replace(/\+/g, " "));
  // Longest first: a secret that holds another is hidden whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * `text` (a driver's error message, a log line) with every secret value of `url` in it replaced by
 * `***`, and `url` itself by `redactUrl(url)`: what a message may show of a connection that failed.
 *
 * @example
 * redactSecrets("ENOENT: open '/keys/app.key'", "postgres://app@db/app?sslkey=/keys/app.key") // "ENOENT: open '***'"
 */
export function redactSecrets(text: string, url: string): string {
  let shown = url.length === 0 ? text : text.split(url).join(redactUrl(url));
  for (const secret of secretsOf(url)) shown = shown.split(secret).join(HIDDEN);
  return shown;
}

/** What `URL` cannot read: the same secrets, found by their shape. */
function redactUnparsed(url: string): string {
  return url
    .replace(/\/\/([^:@/]*):[^@/]*@/, `//$1:${HIDDEN}@`)
    .replace(/([?&;])([^=&;#]*)=([^&;#]*)/g, (pair, sep: string, key: string) => (SECRET_PARAMETER.test(key) ? `${sep}${key}=${HIDDEN}` : pair));
}
