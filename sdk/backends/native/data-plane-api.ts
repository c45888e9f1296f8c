/**
 * The native data plane (native/src/dp_*.c; see sdk/collectives/data-plane.ts) and the 16-bit
 * codec (native/src/half.c; see sdk/collectives/half-codec.ts), as the addon exports them.
 */
export interface DataPlaneKernels {
  dataPlaneProblem(): string | null;
  dataListen(host: string): { fd: number; port: number };
  dataAccept(listenFd: number, token: string, expectRank: number, timeoutMs: number, who: string): Promise<number>;
  dataDial(host: string, port: number, token: string, myRank: number, timeoutMs: number, who: string): Promise<number>;
  /**
   * format: 0 none, 1 fp16, 2 bf16, for data[0..packed). scratch holds received bytes and
   * staged 16-bit values; the caller keeps it for the next operation (native/src/dataplane.h).
   */
  dataAllReduce(
    prevFd: number,
    nextFd: number,
    data: Float32Array,
    position: number,
    size: number,
    chunkElements: number,
    seq: number,
    timeoutMs: number,
    prevName: string,
    nextName: string,
    format: number,
    packed: number,
    phases: number,
    scratch: Uint8Array,
  ): Promise<{ waitMs: number; commMs: number; bytesSent: number }>;
  /** The scratch bytes an all-reduce of n elements over size positions can use. */
  dataScratchBytes(n: number, size: number, chunkElements: number, format: number): number;
  dataShutdown(fd: number): void;
  dataClose(fd: number): void;
  /** The 16-bit codec. */
  halfEncode(format: number, src: Float32Array, dst: Uint8Array): void;
  halfDecode(format: number, src: Uint8Array, dst: Float32Array, dstOffset: number, mode: number): void;
  halfRound(format: number, x: Float32Array): void;
  halfFeedback(format: number, g: Float32Array, r: Float32Array): void;
}
