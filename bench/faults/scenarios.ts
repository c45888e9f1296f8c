import * as os from "node:os";
import * as path from "node:path";
import { cluster, type ClusterBuilder } from "../../sdk/index";

/** What the fault benchmark runs: a strategy with its recovery, and the fault it suffers. */
export interface Scenario {
  name: string;
  /** The cluster for one trial; `dir` is the trial's own folder (checkpoints). */
  cluster(dir: string): ClusterBuilder;
  /** Fit options beyond the shared ones (a checkpoint where the strategy needs one). */
  fit?(dir: string): { checkpoint?: { dir: string; every: number } };
  /** Worker ranks a fault may hit (servers: "server"). */
  victims: readonly number[] | "server";
  signal: "SIGKILL" | "SIGSTOP";
  /** Run with --quick too (the tests' smoke run). */
  quick?: boolean;
}

const WORKERS = 3;
const ranks = [1, 2];
/**
 * Losses are noticed within this; a frozen worker is lost after timeoutMs of silence. The smoke
 * run in the tests (MESHTRAIN_FAULTS_SILENCE_MS) waits longer: beside other tests this machine
 * has held a healthy process still for over 3 s.
 */
export const HEARTBEAT = { intervalMs: 250, timeoutMs: Number(process.env.MESHTRAIN_FAULTS_SILENCE_MS ?? 3000) } as const;
const data = (o: Parameters<ClusterBuilder["strategy"]>[1] = {}): ClusterBuilder =>
  cluster().workers(WORKERS).heartbeat(HEARTBEAT).strategy("data", o as never);
const elastic = { minWorkers: 1 };

const syncPs = (e?: { minWorkers: number }): ClusterBuilder =>
  cluster().workers(WORKERS).ps(2).heartbeat(HEARTBEAT).strategy("ps", { mode: "sync", ...(e ? { elastic: e } : {}) });

const model = (): ClusterBuilder => cluster().workers(WORKERS).heartbeat(HEARTBEAT).strategy("model");
const pipeline = (): ClusterBuilder =>
  cluster().workers(WORKERS).heartbeat(HEARTBEAT).strategy("pipeline", { microBatches: 4, schedule: "1f1b" });
const hybrid = (): ClusterBuilder => cluster().workers(4).heartbeat(HEARTBEAT).strategy("hybrid", { stages: 2 });
/** Stages recover from the fit's last checkpoint: a loss costs the steps since. */
const every8 = (dir: string): { checkpoint: { dir: string; every: number } } => ({ checkpoint: { dir: path.join(dir, "ckpt"), every: 8 } });

export const SCENARIOS: readonly Scenario[] = [
  { name: "data, elastic: the survivors go on", cluster: () => data({ elastic }), victims: ranks, signal: "SIGKILL" },
  { name: "data, elastic + spares(1)", cluster: () => data({ elastic }).spares(1), victims: ranks, signal: "SIGKILL", quick: true },
  { name: "data, elastic + replace: a new worker", cluster: () => data({ elastic: { ...elastic, replace: true } }), victims: ranks, signal: "SIGKILL" },
  { name: "data, elastic + spares(1), frozen (SIGSTOP)", cluster: () => data({ elastic }).spares(1), victims: ranks, signal: "SIGSTOP" },
  { name: "local SGD (sync every 4), elastic", cluster: () => data({ elastic, sync: { every: 4 } }), victims: ranks, signal: "SIGKILL" },
  {
    name: "ZeRO-1, elastic, checkpoint every 4",
    cluster: () => data({ elastic, shard: "optimizer" }),
    fit: (dir) => ({ checkpoint: { dir: path.join(dir, "ckpt"), every: 4 } }),
    victims: ranks,
    signal: "SIGKILL",
  },
  { name: "parameter servers, async (a worker)", cluster: () => cluster().workers(WORKERS).ps(1).heartbeat(HEARTBEAT).strategy("ps", { mode: "async" }), victims: ranks, signal: "SIGKILL" },
  { name: "parameter servers, async (the server)", cluster: () => cluster().workers(WORKERS).ps(1).heartbeat(HEARTBEAT).strategy("ps", { mode: "async" }), victims: "server", signal: "SIGKILL" },
  { name: "parameter servers, sync (a worker)", cluster: () => syncPs(), victims: ranks, signal: "SIGKILL" },
  { name: "parameter servers, sync, elastic (a worker)", cluster: () => syncPs(elastic), victims: ranks, signal: "SIGKILL", quick: true },
  { name: "parameter servers, sync, elastic, frozen (SIGSTOP)", cluster: () => syncPs(elastic), victims: ranks, signal: "SIGSTOP" },
  { name: "parameter servers, sync, elastic + spares(1) (a worker)", cluster: () => syncPs(elastic).spares(1), fit: every8, victims: ranks, signal: "SIGKILL" },
  { name: "parameter servers, sync + spares(1), checkpoint every 8 (a server)", cluster: () => syncPs().spares(1), fit: every8, victims: "server", signal: "SIGKILL" },
  { name: "model parallel (3 stages)", cluster: () => model(), victims: ranks, signal: "SIGKILL" },
  { name: "model parallel + spares(1), checkpoint every 8", cluster: () => model().spares(1), fit: every8, victims: ranks, signal: "SIGKILL" },
  { name: "pipeline (3 stages, 1F1B)", cluster: () => pipeline(), victims: ranks, signal: "SIGKILL" },
  { name: "pipeline + spares(1), checkpoint every 8", cluster: () => pipeline().spares(1), fit: every8, victims: ranks, signal: "SIGKILL", quick: true },
  { name: "pipeline + spares(1), checkpoint every 8, frozen (SIGSTOP)", cluster: () => pipeline().spares(1), fit: every8, victims: ranks, signal: "SIGSTOP" },
  { name: "hybrid (2 replicas x 2 stages)", cluster: () => hybrid(), victims: [1, 2, 3], signal: "SIGKILL" },
  { name: "hybrid + spares(1), checkpoint every 8", cluster: () => hybrid().spares(1), fit: every8, victims: [1, 2, 3], signal: "SIGKILL" },
];

/** A trial's scratch folder. */
export function trialDir(name: string, trial: number): string {
  return path.join(os.tmpdir(), `meshtrain-faults-${process.pid}-${name.replace(/[^a-z0-9]+/gi, "-")}-${trial}`);
}
