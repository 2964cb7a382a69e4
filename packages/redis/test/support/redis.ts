/**
 * The Redis the bridge tests use (`SQLINBOX_REDIS_URL`, default redis://127.0.0.1:6379, which
 * `bash scripts/services.sh` starts): a connection that fails with how to start it, and the entries of a stream.
 */
import { Redis } from "ioredis";

const REDIS_URL = process.env["SQLINBOX_REDIS_URL"] ?? "redis://127.0.0.1:6379";

export async function connectRedis(): Promise<Redis> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw new Error(`Redis at ${REDIS_URL} cannot be reached (${(error as Error).message}): run \`bash scripts/services.sh\` to start it`);
  }
  return redis;
}

export interface StreamEntry {
  readonly entryId: string;
  readonly fields: Readonly<Record<string, string>>;
}

/** Every entry of `stream`, in order. */
export async function streamEntries(redis: Redis, stream: string): Promise<StreamEntry[]> {
  const reply = (await redis.call("XRANGE", [stream, "-", "+"])) as Array<[string, string[]]>;
  return reply.map(([entryId, list]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < list.length; i += 2) fields[list[i] as string] = list[i + 1] as string;
    return { entryId, fields };
  });
}
