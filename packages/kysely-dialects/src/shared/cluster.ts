import type { ClusterVariable } from "../forms/engine-traits.js";

/**
 * A multi-primary cluster the server is a node of: every node takes writes, and a transaction is
 * certified against the other nodes' only at commit (Galera). Locks are the node's own until then:
 * a row lock (`FOR UPDATE`) taken on one node does not stop a claim of the same row on another, and
 * `GET_LOCK` is never seen by another node at all.
 */
export interface MultiPrimaryCluster {
  /** What the startup log names. */
  readonly kind: "Galera";
  /** `wsrep_cluster_size` when the app started. */
  readonly nodes: number;
}

/** Reads the rows of `SchemaStatements.cluster()`: a cluster when `wsrep_on` is `ON`, else none. */
export function clusterOf(rows: readonly ClusterVariable[]): MultiPrimaryCluster | undefined {
  const value = (name: string) => rows.find((r) => r.Variable_name.toLowerCase() === name)?.Value;
  if (value("wsrep_on")?.toUpperCase() !== "ON") return undefined;
  return { kind: "Galera", nodes: Number(value("wsrep_cluster_size") ?? 0) };
}
