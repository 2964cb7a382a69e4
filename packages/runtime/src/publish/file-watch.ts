import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { Database } from "../drivers/database.js";
import { errorFields, type Logger } from "../logger.js";

/** After a change that showed no new version, it is read again after these delays (ms), unless a wake came first. */
const RECHECK_MS = [2, 10, 50, 200];

/**
 * While none of the app's subscriptions waits for work, checks start at least this far apart (ms): a
 * busy app's own commits change the file at nearly every commit, and a wake would start nothing there
 * (its subscriptions claim again as soon as they can); one check per gap, the last change's trailing one
 * included, keeps that to a few cheap statements a second. A change while a subscription waits at its
 * poll is checked at once.
 */
const BUSY_GAP_MS = 25;

/**
 * Wakes the subscriptions of a SQLite database shared by several processes when another process
 * commits to it: no server relays a notification, but every commit writes the database file (or its
 * `-wal` / `-journal` beside it). The folder is watched (inotify, kqueue…: no polling), so a WAL file
 * that is deleted and made again stays seen. A change runs one cheap statement, the connection's data
 * version, which another connection's commit changes and this process's own do not: the process's own
 * writes wake nothing. Changes that come while a check runs are read by one more check after it, and a
 * check that found no new version looks again a few times within a quarter second (a commit's frames
 * reach the WAL before the index that makes them visible). While no subscription waits for work, checks
 * start at least `BUSY_GAP_MS` apart, so a busy app's own commits cost a few statements a second, not one each.
 * When the folder cannot be watched, a warning says so and the poll interval is what wakes.
 */
export class FileWatch {
  readonly #database: Database;
  readonly #file: string;
  readonly #names: ReadonlySet<string>;
  readonly #wake: () => void;
  readonly #logger: Logger;
  /** Whether a subscription this watch wakes waits for work now. */
  readonly #wanted: () => boolean;
  #watcher: FSWatcher | undefined;
  #version: unknown;
  #checking = false;
  #again = false;
  #attempt = 0;
  #recheck: ReturnType<typeof setTimeout> | undefined;
  /** A check waiting for the gap since the last one to pass (`BUSY_GAP_MS`). */
  #trailing: ReturnType<typeof setTimeout> | undefined;
  /** When the last check started (`performance.now()`). */
  #lastCheck = Number.NEGATIVE_INFINITY;
  #stopped = false;

  /**
   * `file`: the main database file's path; `wake` is called once for each commit (or run of commits) another
   * connection made; `wanted`: whether a subscription waits for work now (a change is then checked at once).
   */
  constructor(database: Database, file: string, wake: () => void, logger: Logger, wanted: () => boolean = () => true) {
    this.#database = database;
    this.#file = file;
    const base = basename(file);
    this.#names = new Set([base, `${base}-wal`, `${base}-journal`]);
    this.#wake = wake;
    this.#logger = logger;
    this.#wanted = wanted;
  }

  /** Reads the data version and starts watching; a folder that cannot be watched is logged, and polling goes on alone. */
  async start(): Promise<void> {
    this.#version = await this.#readVersion();
    try {
      // Not persistent: the watch never keeps a process alive on its own.
      this.#watcher = watch(dirname(this.#file), { persistent: false }, (_event, name) => {
        if (name === null || this.#names.has(String(name))) this.#changed();
      });
      this.#watcher.on("error", (error: unknown) => this.#failed(error));
    } catch (error) {
      this.#failed(error);
      return;
    }
    this.#logger.debug({ file: this.#file }, "watching the database file for other processes' commits");
  }

  #failed(error: unknown): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#stopped) return;
    this.#logger.warn({ ...errorFields(error), file: this.#file }, "cannot watch the database file: other processes' publishes are seen at the next poll");
  }

  #changed(): void {
    if (this.#stopped) return;
    clearTimeout(this.#recheck);
    this.#recheck = undefined;
    this.#attempt = 0;
    const wait = this.#wanted() ? 0 : this.#lastCheck + BUSY_GAP_MS - performance.now();
    if (wait <= 0) {
      clearTimeout(this.#trailing);
      this.#trailing = undefined;
      this.#run();
      return;
    }
    if (this.#trailing !== undefined) return;
    this.#trailing = setTimeout(() => {
      this.#trailing = undefined;
      if (!this.#stopped) this.#run();
    }, wait);
    this.#trailing.unref?.();
  }

  #run(): void {
    if (this.#checking) {
      this.#again = true;
      return;
    }
    this.#checking = true;
    this.#lastCheck = performance.now();
    this.#check().then((woke) => {
      this.#checking = false;
      if (this.#stopped) return;
      if (this.#again) {
        this.#again = false;
        this.#changed();
      } else if (!woke && this.#attempt < RECHECK_MS.length) {
        // A commit writes its frames to the WAL (the change seen) before the WAL index that makes them visible:
        // a check between the two reads the old version, and nothing else changes the file. Look again shortly.
        const delay = RECHECK_MS[this.#attempt++];
        this.#recheck = setTimeout(() => {
          this.#recheck = undefined;
          this.#run();
        }, delay);
        this.#recheck.unref?.();
      }
    });
  }

  /** Reads the data version; wakes when another connection committed since the last read. True when it woke. */
  async #check(): Promise<boolean> {
    let version: unknown;
    try {
      version = await this.#readVersion();
    } catch {
      // The database is closing, or busy past its timeout: wake, and let the claim say what is wrong.
      if (!this.#stopped) this.#wake();
      return true;
    }
    if (this.#stopped || version === this.#version) return false;
    this.#version = version;
    this.#wake();
    return true;
  }

  async #readVersion(): Promise<unknown> {
    const { rows } = await this.#database.execute("observe", this.#database.dialect.fileWake.dataVersion());
    return rows[0]?.data_version;
  }

  /** Stops watching. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#recheck);
    clearTimeout(this.#trailing);
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}

/** The main database file's path, or `undefined` for an in-memory or temporary database (nothing to watch). */
export async function databaseFile(database: Database): Promise<string | undefined> {
  const { rows } = await database.execute("schema", database.dialect.fileWake.databaseFile());
  const file = rows[0]?.file;
  return typeof file === "string" && file !== "" ? file : undefined;
}
