import { ProtocolError, StateError } from "../../errors/errors";
import type { LoadOf, Message, MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import type { FlatRanges } from "../../model/flat-state";
import { choicesOfLoad, refusedPair } from "../../protocol/data-option-pairs";
import type { HostIO, RoleEnv, RoleReply, StepReport, WorkerRole } from "../role";
import { loadReplica, replicaStepReport, type LoadedReplica } from "../../compute/loaded-replica";
import { splitFeed, type Feed } from "../../compute/objective";
import type { OptimizerState } from "../../compute/tfjs-update";
import { commHookOf } from "./hooks/hook-table";
import { OwnCopy } from "./own-copy";
import { ReplicaSlice } from "./replica-slice";
import { StepBuffer } from "./step-buffer";
import type { AllReduceFn, StepResult } from "./step-result";
import type { GradientSum } from "./sums/gradient-sum";
import { gradientSumOf } from "./sums/sum-table";

/**
 * One replica of data parallelism: it reads its slice of each step (attached, or from the
 * worker's own copy of the dataset) and hands it to the summing scheme it composes, with the
 * comm hook that scheme sends the gradient through. Both are chosen once, at load (sums/ and
 * hooks/); nothing here asks again which they are.
 */
export class DataReplica implements WorkerRole {
  /** The native step copies a batch in; TF.js's tensors of it are disposed with the step. */
  readonly freesStepInputs = true;

  private constructor(
    private readonly r: LoadedReplica,
    private readonly sum: GradientSum,
    /** The worker's own copy of the data (feed "workers"), and the order of the epoch it is in. */
    private ownData: OwnCopy | null,
  ) {}

  static async load(
    msg: LoadOf<"replica">,
    weights: Tensorlike[] | "initial",
    env: Partial<RoleEnv> = {},
  ): Promise<DataReplica> {
    // The driver refuses these pairs before it sends a load: one that arrives was not sent by a driver of this version.
    const refused = refusedPair(choicesOfLoad(msg));
    if (refused) throw new ProtocolError(`the load asks for what cannot work together: ${refused.message}`);
    const r = await loadReplica(msg, weights, env.memoryCapBytes ?? null);
    const io = env.io ?? noLinks;
    const parts = {
      r,
      load: msg,
      hook: commHookOf(msg.hook, r),
      slice: new ReplicaSlice(r, msg),
      buffer: new StepBuffer(),
      io,
    };
    return new DataReplica(r, await gradientSumOf(parts), msg.data ? OwnCopy.of(msg.data) : null);
  }

  /** The summing scheme's kind ("all-reduce", "zero-1", ...), for reports and tests. */
  get sumKind(): string {
    return this.sum.kind;
  }

  get loaded(): WorkerRole["loaded"] {
    const awaiting = this.sum.awaiting();
    const data = this.ownData ? { datasetSize: this.ownData.dataset.size, dataBytes: this.ownData.dataset.bytes } : {};
    return {
      paramCount: this.r.model.countParams(),
      gradientLength: this.r.gradientLength,
      replicaStep: replicaStepReport(this.r),
      ...data,
      ...(awaiting ? { shardRanges: awaiting } : {}),
    };
  }

  /** A step of the driver's: its slice comes attached (in-graph) or is read from the worker's own copy (between-graph). */
  step(msg: MessageOf<"step">, attachments: Tensorlike[], io: HostIO): Promise<StepReport> {
    const feed =
      msg.sync === "only"
        ? { x: [], y: [] }
        : msg.range
          ? this.readSlice(msg.epoch, msg.range.start, msg.range.end)
          : splitFeed(this.r.model, attachments);
    if (!feed)
      throw new ProtocolError(`"step" ${msg.step} carries ${attachments.length} tensors, expected ${this.expected}`);
    return this.sum.step(
      {
        weight: msg.weight,
        x: feed.x,
        y: feed.y,
        step: msg.step,
        learningRate: msg.learningRate,
        sync: msg.sync,
        overlap: msg.overlap,
      },
      io,
    );
  }

  /** Validation, elastic training's rewind, and ZeRO-3's shard of the weights. */
  answer(msg: Message, attachments: Tensorlike[] = []): Promise<RoleReply> | undefined {
    if (msg.type === "evaluate") {
      const feed = splitFeed(this.r.model, attachments);
      if (!feed)
        return Promise.reject(
          new ProtocolError(`"evaluate" carries ${attachments.length} tensors, expected ${this.expected}`),
        );
      return this.sum.evaluate(feed.x, feed.y, msg).then((s) => ({ draft: { type: "evaluated", re: msg.id, ...s } }));
    }
    if (msg.type === "setShard") return this.sum.setShard(msg, attachments);
    if (msg.type !== "rewind") return undefined;
    return this.sum.rewind(msg).then((applied) => ({ draft: { type: "rewound", re: msg.id, applied } }));
  }

  /** One step on this replica's slice with `allReduce` as its only link (the profiler's and the benchmarks' step, timed alone). */
  train(weight: number, x: Feed, y: Feed, allReduce: AllReduceFn, step = 0): Promise<StepResult> {
    return this.sum.step({ weight, x, y, step, learningRate: undefined, sync: undefined }, linksOf(allReduce));
  }

  /** What a step or an evaluation carries: the model's inputs, then one target per output. */
  private get expected(): string {
    return `${this.r.model.inputs.length} input(s) and ${this.r.model.outputs.length} target(s)`;
  }

  /** This replica's slice of a step, read from the worker's own copy of the dataset. */
  private readSlice(epoch: number, start: number, end: number): { x: Feed; y: Feed } {
    if (!this.ownData)
      throw new StateError("a step named a range of the dataset, but no dataset was loaded on this worker");
    return this.ownData.slice(epoch, start, end);
  }

  async weights(): Promise<{ tensors: Tensorlike[] }> {
    return { tensors: await this.sum.weights() };
  }

  exportState(): Promise<OptimizerState> {
    return this.sum.exportState();
  }

  importState(state: OptimizerState): Promise<void> {
    return this.sum.importState(state);
  }

  stateRanges(): Promise<FlatRanges> {
    return this.sum.stateRanges();
  }

  dispose(): void {
    this.ownData = null;
    this.r.model.dispose();
    this.sum.dispose();
    this.r.compileOptimizer.dispose();
  }
}

function noLinks(): HostIO {
  throw new StateError("this worker has no links yet: a ZeRO-2 or ZeRO-3 replica is cut where its ring places it");
}

/** Links that only all-reduce, through `allReduce`: a step that needs more (ZeRO, a pipeline) is refused. */
function linksOf(allReduce: AllReduceFn): HostIO {
  const none = (): never => {
    throw new StateError("a replica trained alone has only its all-reduce: ZeRO's collectives need the worker's ring");
  };
  return {
    allReduce,
    reduceScatter: none,
    allGather: none,
    shardOf: none,
    overlap: () => null,
    receive: none,
    send: none,
    servers: { pull: none, push: none },
  };
}
