import { StateError } from "../../../errors/errors";
import type { FlatRanges } from "../../../model/flat-state";
import { readWeights } from "../../../model/model-io";
import type { Feed } from "../../../compute/objective";
import type { OptimizerState } from "../../../compute/tfjs-update";
import type { MessageOf } from "../../../protocol/messages";
import type { Tensorlike } from "../../../protocol/tensor";
import type { HostIO, RoleReply } from "../../role";
import { evaluateShard } from "../evaluate-shard";
import type { StepResult } from "../step-result";
import type { EvaluationSums, GradientSum, ReplicaParts, StepInput } from "./gradient-sum";

/**
 * A summing scheme whose replica holds the whole model's weights between steps (all but
 * ZeRO-2/3): the weights are read where they are, validation runs the whole model, the optimizer
 * state covers every parameter unless the scheme says otherwise, and no shard is awaited.
 */
export abstract class WholeModelSum implements GradientSum {
  abstract readonly kind: string;

  constructor(protected readonly p: ReplicaParts) {}

  abstract step(s: StepInput, io: HostIO): Promise<StepResult>;
  abstract rewind(msg: MessageOf<"rewind">): Promise<number>;
  abstract exportState(): Promise<OptimizerState>;
  abstract importState(state: OptimizerState): Promise<void>;
  abstract dispose(): void;

  weights(): Promise<Tensorlike[]> {
    return readWeights(this.p.r.model);
  }

  async stateRanges(): Promise<FlatRanges> {
    return [[0, this.p.r.gradientLength]];
  }

  evaluate(x: Feed, y: Feed, msg: MessageOf<"evaluate">): Promise<EvaluationSums> {
    return evaluateShard(this.p.r, x, y, msg.batchSize);
  }

  awaiting(): FlatRanges | undefined {
    return undefined;
  }

  setShard(): Promise<RoleReply> {
    const why = `"setShard" came to a replica that holds no layers' shards (ZeRO-3); this one sums by ${this.kind}`;
    return Promise.reject(new StateError(why));
  }
}
