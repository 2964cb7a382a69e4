/**
 * Which engines a test run covers: `SQLINBOX_ENGINES`, a comma list of `sqlite`, `postgres` and
 * `mariadb`; every engine when it is unset or empty. Each package's list of test engines reads it,
 * so `SQLINBOX_ENGINES=sqlite` runs the SQLite part of every matrix and touches no server. A name
 * that is not an engine fails the run, naming the ones there are.
 */
const ENGINE_NAMES = ["sqlite", "postgres", "mariadb"] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];

const isEngineName = (name: string): name is EngineName => (ENGINE_NAMES as readonly string[]).includes(name);

/** The engines a value of `SQLINBOX_ENGINES` names, in the order of `ENGINE_NAMES`. */
function parseEngines(value: string | undefined): readonly EngineName[] {
  const names = (value ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  if (names.length === 0) return ENGINE_NAMES;
  const unknown = names.filter((name) => !isEngineName(name));
  if (unknown.length > 0) {
    throw new Error(
      `SQLINBOX_ENGINES=${value} names ${unknown.map((n) => `"${n}"`).join(", ")}, which is not an engine: give a comma list of ${ENGINE_NAMES.join(", ")}, or leave it unset for all`,
    );
  }
  return ENGINE_NAMES.filter((name) => names.includes(name));
}

/** The engines this run covers. */
const selectedEngines: readonly EngineName[] = parseEngines(process.env["SQLINBOX_ENGINES"]);

/** The engines this run leaves out (none when `SQLINBOX_ENGINES` is unset). */
export const leftOutEngines: readonly EngineName[] = ENGINE_NAMES.filter((name) => !selectedEngines.includes(name));

/** Whether this run covers `engine`: a test of that engine alone runs under `describe.runIf(selects(engine))`. */
export function selects(engine: EngineName): boolean {
  return selectedEngines.includes(engine);
}

/** The error of a test that reaches for a server the run leaves out: it should be gated by `selects`. */
export function leftOutError(engine: EngineName, what: string): Error {
  return new Error(
    `${what} is left out of this run (SQLINBOX_ENGINES=${process.env["SQLINBOX_ENGINES"]}), yet a test connects to it: run that test only when the engine is selected (describe.runIf(selects("${engine}")))`,
  );
}
