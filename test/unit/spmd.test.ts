import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../sdk/errors/errors";
import { firstHost } from "../../sdk/util/hostlist";
import { spmdPlace } from "../../sdk/launchers/spmd";

test("firstHost: the first host of a Slurm host list, zero padding kept", () => {
  assert.equal(firstHost("node01"), "node01");
  assert.equal(firstHost("node[01-04,07],gpu3"), "node01");
  assert.equal(firstHost("gpu3,node[1-2]"), "gpu3");
  assert.equal(firstHost("node[7,2-3]"), "node7");
  assert.equal(firstHost("rack[2-3]-n[008-009]"), "rack2-n008");
  assert.equal(firstHost(""), undefined);
  assert.equal(firstHost("a b"), undefined);
});

test("spmdPlace: rank, size and rank 0's host from each environment; MESHTRAIN_DRIVER and options override", () => {
  const torch = { RANK: "2", WORLD_SIZE: "4", MASTER_ADDR: "head", MASTER_PORT: "29500" };
  assert.deepEqual(spmdPlace(torch), { rank: 2, worldSize: 4, driverHost: "head", port: 7071, source: "torchrun (RANK, WORLD_SIZE)" });
  assert.deepEqual(spmdPlace({ SLURM_PROCID: "1", SLURM_NTASKS: "2", SLURM_JOB_NODELIST: "n[3-4]", SLURM_STEP_NODELIST: "n4" }), { rank: 1, worldSize: 2, driverHost: "n4", port: 7071, source: "Slurm (SLURM_PROCID, SLURM_NTASKS)" });
  assert.equal(spmdPlace({ TF_CONFIG: JSON.stringify({ cluster: { worker: ["w0:2222", "w1:2222"] }, task: { type: "worker", index: 1 } }) }).driverHost, "w0");
  assert.deepEqual(spmdPlace({ ...torch, MESHTRAIN_DRIVER: "10.0.0.9:9000" }), { rank: 2, worldSize: 4, driverHost: "10.0.0.9", port: 9000, source: "torchrun (RANK, WORLD_SIZE)" });
  assert.equal(spmdPlace({ ...torch, MESHTRAIN_DRIVER: "[fd00::1]" }).driverHost, "fd00::1");
  assert.deepEqual(spmdPlace({ JOB_COMPLETION_INDEX: "3" }, { workers: 4, driver: "trainer-0", port: 7100 }), { rank: 3, worldSize: 4, driverHost: "trainer-0", port: 7100, source: "Kubernetes Indexed Job (JOB_COMPLETION_INDEX)" });
});

test("spmdPlace: what the environment leaves out is a ConfigError saying what to add", () => {
  const fails = (env: Record<string, string>, o: Parameters<typeof spmdPlace>[1], re: RegExp): void => {
    assert.throws(() => spmdPlace(env, o), (e: unknown) => e instanceof ConfigError && re.test(e.message) && e.hint !== undefined);
  };
  fails({}, {}, /no rank in the environment/);
  fails({ JOB_COMPLETION_INDEX: "1" }, { driver: "d" }, /not how many there are/);
  fails({ OMPI_COMM_WORLD_RANK: "1", OMPI_COMM_WORLD_SIZE: "2" }, {}, /does not say where rank 0 runs/);
  fails({ RANK: "1", WORLD_SIZE: "2", MASTER_ADDR: "h" }, { workers: 3 }, /says the job has 2/);
  fails({ JOB_COMPLETION_INDEX: "4" }, { workers: 4, driver: "d" }, /rank 4 .* is not below the job's size 4/);
  fails({ RANK: "0", WORLD_SIZE: "2", MESHTRAIN_DRIVER: "a b" }, {}, /MESHTRAIN_DRIVER="a b" is not a host/);
});
