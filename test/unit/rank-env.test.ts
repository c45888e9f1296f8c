import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../sdk/errors/errors";
import { describeRankEnv, detectRankEnv } from "../../sdk/config/rank-env";

/** Each launcher's variables as its documentation gives them, and the order they are read in. */

test("TF_CONFIG: task.index among cluster.worker, rank 0's address from the first worker", () => {
  const r = detectRankEnv({ TF_CONFIG: JSON.stringify({ cluster: { worker: ["10.0.0.1:2222", "10.0.0.2:2222", "10.0.0.3:2222"] }, task: { type: "worker", index: 2 } }) });
  assert.deepEqual(r, { rank: 2, worldSize: 3, localRank: undefined, driverHost: "10.0.0.1", source: "TF_CONFIG" });
  assert.throws(() => detectRankEnv({ TF_CONFIG: "{" }), ConfigError);
  assert.throws(() => detectRankEnv({ TF_CONFIG: JSON.stringify({ cluster: { worker: ["a:1"] }, task: { type: "worker", index: 1 } }) }), /task \{ type: "worker", index \} within it/);
});

test("torchrun, Slurm, Kubernetes Indexed Jobs and Open MPI, first found first", () => {
  assert.deepEqual(detectRankEnv({ RANK: "1", WORLD_SIZE: "4", LOCAL_RANK: "1", MASTER_ADDR: "head", MASTER_PORT: "29500", SLURM_PROCID: "3" }), {
    rank: 1, worldSize: 4, localRank: 1, driverHost: "head", source: "torchrun (RANK, WORLD_SIZE)",
  });
  assert.deepEqual(detectRankEnv({ SLURM_PROCID: "3", SLURM_NTASKS: "4", SLURM_LOCALID: "1" }), { rank: 3, worldSize: 4, localRank: 1, driverHost: undefined, source: "Slurm (SLURM_PROCID, SLURM_NTASKS)" });
  assert.deepEqual(detectRankEnv({ JOB_COMPLETION_INDEX: "5" }), { rank: 5, worldSize: undefined, localRank: undefined, driverHost: undefined, source: "Kubernetes Indexed Job (JOB_COMPLETION_INDEX)" });
  assert.equal(detectRankEnv({ OMPI_COMM_WORLD_RANK: "0", OMPI_COMM_WORLD_SIZE: "2" })?.worldSize, 2);
  assert.equal(detectRankEnv({ PATH: "/usr/bin" }), null);
});

test("a rank that is not a whole number below the world size is refused, naming the variable", () => {
  assert.throws(() => detectRankEnv({ SLURM_PROCID: "x" }), /SLURM_PROCID="x" is not a whole number/);
  assert.throws(() => detectRankEnv({ RANK: "4", WORLD_SIZE: "4" }), /RANK=4 is not below WORLD_SIZE=4/);
});

test("meshtrain env says what it found and from where", () => {
  assert.match(describeRankEnv(detectRankEnv({ SLURM_PROCID: "3", SLURM_NTASKS: "4" })), /^rank 3 of 4 \(from Slurm/);
  assert.match(describeRankEnv(null), /no rank in the environment/);
});
