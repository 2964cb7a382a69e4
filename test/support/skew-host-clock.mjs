// A host whose clock is off: loaded with `node --import`, it makes `Date.now()` and `new Date()` read
// `SQLINBOX_TEST_HOST_SKEW_MS` ms ahead (negative: behind) for the whole process, as on a host without
// NTP. Dates built from a value, timers and `performance.now()` are untouched: a duration is the same.
const skew = Number(process.env.SQLINBOX_TEST_HOST_SKEW_MS ?? "0");
if (!Number.isFinite(skew)) throw new Error(`SQLINBOX_TEST_HOST_SKEW_MS is not a number: ${process.env.SQLINBOX_TEST_HOST_SKEW_MS}`);
const HostDate = globalThis.Date;
const now = () => HostDate.now() + skew;
globalThis.Date = new Proxy(HostDate, {
  construct: (target, args, newTarget) => Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget),
  apply: () => new HostDate(now()).toString(),
  get: (target, key, receiver) => (key === "now" ? now : Reflect.get(target, key, receiver)),
});
