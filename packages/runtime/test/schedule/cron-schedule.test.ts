/**
 * The schedule of `app.cron(…)` without a database, as tables: the ticks croner gives around
 * daylight-saving changes (Europe/Berlin, America/New_York) and in other time zones, which missed
 * ticks a start publishes (`catchUp`), what a late wake-up publishes, the tick's key, and the
 * errors a bad declaration gets where it is written.
 */
import { InboxSpec, column, isSqlInboxError, payloadOf } from "@sqlinbox/core";
import { describe, expect, test } from "vitest";
import { App, SqlBroker } from "../../src/index.js";
import { CronSchedule, cronKey, dueTicks } from "../../src/schedule/cron-schedule.js";

const parse = (pattern: string, timeZone?: string): CronSchedule => CronSchedule.parse(pattern, timeZone, "digest", new Date("2026-01-01T00:00:00Z"));

/** The first `n` ticks strictly after `from`, as ISO strings. */
function ticks(schedule: CronSchedule, from: string, n: number): string[] {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    const next = schedule.next(at);
    if (next === undefined) break;
    out.push(next.toISOString());
    at = next;
  }
  return out;
}

/** A UTC instant as the wall clock of `timeZone` shows it, with its offset: `2026-03-29 03:00 GMT+2`. */
function wall(iso: string, timeZone: string): string {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZoneName: "shortOffset",
  }).formatToParts(new Date(iso));
  const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? "";
  return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")} ${get("timeZoneName")}`;
}

interface DstCase {
  readonly name: string;
  readonly pattern: string;
  readonly timeZone: string;
  readonly from: string;
  /** The ticks, in UTC and on the zone's wall clock. */
  readonly expected: ReadonlyArray<readonly [string, string]>;
}

const dst: readonly DstCase[] = [
  {
    name: "Berlin, spring forward: a fixed 02:30 that does not exist runs once, at 03:00 CEST (the first time after the gap)",
    pattern: "30 2 * * *",
    timeZone: "Europe/Berlin",
    from: "2026-03-28T12:00:00Z",
    expected: [
      ["2026-03-29T01:00:00.000Z", "2026-03-29 03:00 GMT+2"],
      ["2026-03-30T00:30:00.000Z", "2026-03-30 02:30 GMT+2"],
    ],
  },
  {
    name: "Berlin, spring forward: every 30 minutes skips the wall-clock times that do not exist (every real half hour)",
    pattern: "*/30 * * * *",
    timeZone: "Europe/Berlin",
    from: "2026-03-28T23:59:00Z",
    expected: [
      ["2026-03-29T00:00:00.000Z", "2026-03-29 01:00 GMT+1"],
      ["2026-03-29T00:30:00.000Z", "2026-03-29 01:30 GMT+1"],
      ["2026-03-29T01:00:00.000Z", "2026-03-29 03:00 GMT+2"],
      ["2026-03-29T01:30:00.000Z", "2026-03-29 03:30 GMT+2"],
    ],
  },
  {
    name: "Berlin, fall back: a fixed 02:30 that happens twice runs once, at its first occurrence (CEST)",
    pattern: "30 2 * * *",
    timeZone: "Europe/Berlin",
    from: "2026-10-24T12:00:00Z",
    expected: [
      ["2026-10-25T00:30:00.000Z", "2026-10-25 02:30 GMT+2"],
      ["2026-10-26T01:30:00.000Z", "2026-10-26 02:30 GMT+1"],
    ],
  },
  {
    name: "Berlin, fall back: every 30 minutes runs on both occurrences of 02:00 and 02:30",
    pattern: "*/30 * * * *",
    timeZone: "Europe/Berlin",
    from: "2026-10-24T23:59:00Z",
    expected: [
      ["2026-10-25T00:00:00.000Z", "2026-10-25 02:00 GMT+2"],
      ["2026-10-25T00:30:00.000Z", "2026-10-25 02:30 GMT+2"],
      ["2026-10-25T01:00:00.000Z", "2026-10-25 02:00 GMT+1"],
      ["2026-10-25T01:30:00.000Z", "2026-10-25 02:30 GMT+1"],
      ["2026-10-25T02:00:00.000Z", "2026-10-25 03:00 GMT+1"],
    ],
  },
  {
    name: "New York, spring forward: 09:00 stays 09:00 on the wall clock (14:00 UTC, then 13:00 UTC)",
    pattern: "0 9 * * *",
    timeZone: "America/New_York",
    from: "2026-03-07T00:00:00Z",
    expected: [
      ["2026-03-07T14:00:00.000Z", "2026-03-07 09:00 GMT-5"],
      ["2026-03-08T13:00:00.000Z", "2026-03-08 09:00 GMT-4"],
      ["2026-03-09T13:00:00.000Z", "2026-03-09 09:00 GMT-4"],
    ],
  },
  {
    name: "New York, spring forward: a fixed 02:30 that does not exist runs at 03:00 EDT",
    pattern: "30 2 * * *",
    timeZone: "America/New_York",
    from: "2026-03-07T12:00:00Z",
    expected: [
      ["2026-03-08T07:00:00.000Z", "2026-03-08 03:00 GMT-4"],
      ["2026-03-09T06:30:00.000Z", "2026-03-09 02:30 GMT-4"],
    ],
  },
  {
    name: "New York, fall back: a fixed 01:30 that happens twice runs once (EDT)",
    pattern: "30 1 * * *",
    timeZone: "America/New_York",
    from: "2026-10-31T12:00:00Z",
    expected: [
      ["2026-11-01T05:30:00.000Z", "2026-11-01 01:30 GMT-4"],
      ["2026-11-02T06:30:00.000Z", "2026-11-02 01:30 GMT-5"],
    ],
  },
  {
    name: "New York, fall back: every 15 minutes in the repeated hour runs in both (8 ticks in two real hours)",
    pattern: "*/15 1 * * *",
    timeZone: "America/New_York",
    from: "2026-11-01T04:59:00Z",
    expected: [
      ["2026-11-01T05:00:00.000Z", "2026-11-01 01:00 GMT-4"],
      ["2026-11-01T05:15:00.000Z", "2026-11-01 01:15 GMT-4"],
      ["2026-11-01T05:30:00.000Z", "2026-11-01 01:30 GMT-4"],
      ["2026-11-01T05:45:00.000Z", "2026-11-01 01:45 GMT-4"],
      ["2026-11-01T06:00:00.000Z", "2026-11-01 01:00 GMT-5"],
      ["2026-11-01T06:15:00.000Z", "2026-11-01 01:15 GMT-5"],
      ["2026-11-01T06:30:00.000Z", "2026-11-01 01:30 GMT-5"],
      ["2026-11-01T06:45:00.000Z", "2026-11-01 01:45 GMT-5"],
    ],
  },
];

describe("ticks around daylight-saving changes", () => {
  test.each(dst)("$name", ({ pattern, timeZone, from, expected }) => {
    const got = ticks(parse(pattern, timeZone), from, expected.length);
    expect(got.map((iso) => [iso, wall(iso, timeZone)])).toEqual(expected);
  });
});

describe("time zones", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined, string]> = [
    ["UTC", "UTC", "2026-06-01T06:00:00.000Z"],
    ["Asia/Kolkata (+05:30)", "Asia/Kolkata", "2026-06-01T00:30:00.000Z"],
    ["Asia/Tokyo (+09:00, the day before in UTC)", "Asia/Tokyo", "2026-05-31T21:00:00.000Z"],
    ["America/New_York in summer (-04:00)", "America/New_York", "2026-06-01T10:00:00.000Z"],
    ["Europe/Berlin in summer (+02:00)", "Europe/Berlin", "2026-06-01T04:00:00.000Z"],
    ["Australia/Lord_Howe (+11:00 in its summer, +10:30 in winter)", "Australia/Lord_Howe", "2026-05-31T19:30:00.000Z"],
  ];
  test.each(cases)("06:00 on 2026-06-01 in %s", (_, timeZone, expected) => {
    expect(ticks(parse("0 6 1 6 *", timeZone), "2026-05-01T00:00:00Z", 1)).toEqual([expected]);
  });

  test("a pattern with seconds (6 fields) ticks within the minute", () => {
    expect(ticks(parse("*/20 * * * * *", "Europe/Berlin"), "2026-01-01T00:00:05.500Z", 4)).toEqual([
      "2026-01-01T00:00:20.000Z",
      "2026-01-01T00:00:40.000Z",
      "2026-01-01T00:01:00.000Z",
      "2026-01-01T00:01:20.000Z",
    ]);
  });

  test("next is strictly after: a tick at the reference itself is the one before", () => {
    expect(ticks(parse("* * * * * *"), "2026-01-01T00:00:10.000Z", 1)).toEqual(["2026-01-01T00:00:11.000Z"]);
  });
});

describe("catchUp: the missed ticks a start publishes", () => {
  const everyTenSeconds = parse("*/10 * * * * *");
  const cases: ReadonlyArray<readonly [string, number, string, readonly string[]]> = [
    ["none by default", 0, "2026-01-01T00:01:05.000Z", []],
    ["the most recent one", 1, "2026-01-01T00:01:05.000Z", ["2026-01-01T00:01:00.000Z"]],
    ["the three most recent, oldest first", 3, "2026-01-01T00:01:05.000Z", ["2026-01-01T00:00:40.000Z", "2026-01-01T00:00:50.000Z", "2026-01-01T00:01:00.000Z"]],
    ["a tick at the start itself counts as missed", 2, "2026-01-01T00:01:00.000Z", ["2026-01-01T00:00:50.000Z", "2026-01-01T00:01:00.000Z"]],
    ["a tick a millisecond after the start does not", 1, "2026-01-01T00:00:59.999Z", ["2026-01-01T00:00:50.000Z"]],
  ];
  test.each(cases)("%s (catchUp %i at %s)", (_, catchUp, now, expected) => {
    expect(everyTenSeconds.missed(catchUp, new Date(now)).map((d) => d.toISOString())).toEqual(expected);
  });

  test("across a daylight-saving change, the missed ticks are the real ones (Berlin, fall back, every 30 minutes)", () => {
    const missed = parse("*/30 * * * *", "Europe/Berlin").missed(4, new Date("2026-10-25T01:45:00Z"));
    expect(missed.map((d) => wall(d.toISOString(), "Europe/Berlin"))).toEqual([
      "2026-10-25 02:00 GMT+2",
      "2026-10-25 02:30 GMT+2",
      "2026-10-25 02:00 GMT+1",
      "2026-10-25 02:30 GMT+1",
    ]);
  });

  test("a daily tick missed last night is found a day back", () => {
    expect(
      parse("0 3 * * *", "Europe/Berlin")
        .missed(2, new Date("2026-06-10T12:00:00Z"))
        .map((d) => d.toISOString()),
    ).toEqual(["2026-06-09T01:00:00.000Z", "2026-06-10T01:00:00.000Z"]);
  });
});

describe("a wake-up publishes the ticks passed since the last one", () => {
  const everySecond = parse("* * * * * *");
  const at = (s: string): Date => new Date(`2026-01-01T00:00:${s}Z`);
  const iso = (d: readonly Date[]): string[] => d.map((t) => t.toISOString().slice(17, 23));

  test("on time: the one tick it waited for", () => {
    expect(iso(dueTicks(everySecond, at("10.000"), at("11.000"), 10).due)).toEqual(["11.000"]);
  });
  test("woken early (a timer a millisecond ahead): nothing yet", () => {
    expect(dueTicks(everySecond, at("10.000"), at("10.999"), 10)).toEqual({ due: [] });
  });
  test("late under load: every tick it passed, oldest first", () => {
    expect(iso(dueTicks(everySecond, at("10.000"), at("13.400"), 10).due)).toEqual(["11.000", "12.000", "13.000"]);
  });
  test("after a long pause: the `limit` most recent, the older ones skipped", () => {
    const { due, skipped } = dueTicks(everySecond, at("10.000"), at("30.000"), 3);
    expect(iso(due)).toEqual(["28.000", "29.000", "30.000"]);
    expect(skipped && iso([skipped.from, skipped.to])).toEqual(["11.000", "27.000"]);
  });
});

test("a tick's key names the route and the tick's time in UTC, whatever the time zone", () => {
  const tick = parse("0 6 * * *", "Europe/Berlin").next(new Date("2026-06-01T00:00:00Z")) as Date;
  expect(cronKey("daily-digest", tick)).toBe("cron:daily-digest:2026-06-01T04:00:00.000Z");
});

describe("a bad declaration fails at app.cron(…), naming what is wrong", () => {
  interface Digest {
    readonly day: string;
  }
  const Keyed = InboxSpec.table("digest_jobs", column("id").generated()).lease(column("locked_until")).key(column("job_key")).payload(column("payload"), payloadOf<Digest>());
  const Unkeyed = InboxSpec.table("plain_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Digest>());
  const broker = SqlBroker.fromUrl("sqlite::memory:").route(Keyed, "digest").route(Unkeyed, "plain");
  const app = new App({ name: "t", version: "1" }).withBroker(broker, (b) => b);
  // A name only known at run time compiles; each mistake is then a Declaration (or NoRoute) error.
  const cron = (route: string, pattern: string, options?: { timeZone?: string; catchUp?: number }) => () => app.cron(route, pattern, { day: "x" }, options);

  const cases: ReadonlyArray<readonly [string, () => unknown, string, RegExp]> = [
    ["an invalid field", cron("digest", "61 * * * *"), "Declaration", /cannot read the pattern "61 \* \* \* \*": CronPattern: Invalid value for minute: 61/],
    ["too few fields", cron("digest", "every day"), "Declaration", /cannot read the pattern "every day": .*exactly five, six, or seven/],
    // A zone typo is named as the zone: nothing about fields, which are fine.
    [
      "an unknown time zone",
      cron("digest", "0 6 * * *", { timeZone: "Europe/Berln" }),
      "Declaration",
      /^Declaration: app\.cron\(…, \{ timeZone: "Europe\/Berln" \}\): this host knows no time zone "Europe\/Berln" \(for the pattern "0 6 \* \* \*"\): give an IANA name[^;]*; Intl\.supportedValuesOf\("timeZone"\) lists them \(route "digest"\)$/,
    ],
    ["a date that never comes", cron("digest", "0 0 30 2 *"), "Declaration", /the pattern "0 0 30 2 \*" never fires/],
    ["a table without a key column", cron("plain", "0 6 * * *"), "Declaration", /needs a dedup key column .*table "plain_jobs"/],
    ["catchUp without a processedAt column", cron("digest", "0 6 * * *", { catchUp: 2 }), "Declaration", /needs a processedAt column .*table "digest_jobs"/],
    ["a negative catchUp", cron("digest", "0 6 * * *", { catchUp: -1 }), "Declaration", /catchUp: -1/],
    ["a route no broker of the app declares", cron("nope", "0 6 * * *"), "NoRoute", /no broker of this app declares route "nope"/],
  ];
  test.each(cases)("%s", (_, declare, code, message) => {
    let thrown: unknown;
    try {
      declare();
    } catch (error) {
      thrown = error;
    }
    expect(isSqlInboxError(thrown, code as "Declaration")).toBe(true);
    expect((thrown as Error).message).toMatch(message);
  });

  test("a good declaration returns a new app and leaves the old one alone", () => {
    const next = app.cron("digest", "0 6 * * *", { day: "x" });
    expect(next).not.toBe(app);
    expect(next).toBeInstanceOf(App);
  });
});
