import assert from "node:assert/strict";
import { test } from "node:test";
import { memberLoss } from "../../sdk/driver/await";
import { WorkerLostError } from "../../sdk/errors/errors";
import type { FitContext } from "../../sdk/driver/fit-context";
import type { WorkerHandle } from "../../sdk/members/worker-handle";

test("a fit that survives its members' losses hears of a member's, which the cluster never reports, without waiting out the cluster's", async () => {
  const asked: number[] = [];
  const ctx = { lossWithin: (ms: number) => (asked.push(ms), Promise.resolve(undefined)) } as unknown as FitContext;
  const member = { lost: undefined as WorkerLostError | undefined };
  const members = [member] as unknown as WorkerHandle[];
  setTimeout(() => (member.lost = new WorkerLostError("worker rank 1 exited")), 30);
  const loss = await memberLoss(ctx, members, 60_000);
  assert.equal(loss?.message, "worker rank 1 exited");
  assert.deepEqual(asked, [], "the cluster was not asked: the member's loss answered");
  // No member lost within the wait: the cluster's own loss, asked for at once.
  assert.equal(await memberLoss(ctx, [{ lost: undefined }] as unknown as WorkerHandle[], 50), undefined);
  assert.deepEqual(asked, [0]);
});
