import type { AllReducer } from "../../collectives/all-reducer";
import type { NativeRingOptions } from "../../collectives/native-ring";
import type { NativeAddon } from "../../backends/native/addon";
import { ProtocolError, type MeshtrainError } from "../../errors/errors";
import { toWireError } from "../../protocol/wire-error";
import { toCompute } from "./thread";

/**
 * The communication thread's side of a native ring that the compute thread runs itself (a hop
 * between threads each way costs more than the all-reduce of a small model). This side keeps
 * the heartbeats: when a neighbour dies, goes silent, or the ring is closed, it shuts the sockets
 * down (waking the compute thread's operation) and then tells the compute thread why. After that
 * it never touches the descriptors again: the compute thread closes them.
 */
export class ComputeSideRing implements AllReducer {
  private failed = false;

  constructor(
    private readonly addon: NativeAddon,
    private readonly o: NativeRingOptions,
  ) {
    toCompute({ kind: "nativeRing", ring: { ...o } });
  }

  run(): Promise<never> {
    return Promise.reject(
      new ProtocolError("an all-reduce reached the communication thread, but this ring's runs on the compute thread"),
    );
  }

  fail(err: MeshtrainError): void {
    if (this.failed) return;
    this.failed = true;
    this.addon.dataShutdown(this.o.prevFd);
    this.addon.dataShutdown(this.o.nextFd);
    toCompute({ kind: "nativeRingFailed", error: toWireError(err) });
  }

  waitingFor(): undefined {
    return undefined;
  }
}
