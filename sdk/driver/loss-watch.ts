import type { MeshtrainError } from "../errors/errors";

/**
 * The loss of a worker as something to wait on: once the cluster has failed, every wait that
 * guards with it rejects with that loss, whatever else it was waiting for.
 */
export class LossWatch {
  /** The loss that failed the cluster, once one did. */
  failure: MeshtrainError | undefined;
  private readonly listeners = new Set<(err: MeshtrainError) => void>();

  fail(err: MeshtrainError): void {
    this.failure = err;
    for (const l of [...this.listeners]) l(err);
  }

  /** Resolves as `p` does, or rejects with the loss of a worker as soon as one is lost. */
  guard<T>(p: Promise<T>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const onLoss = (err: MeshtrainError): void => reject(err);
      this.listeners.add(onLoss);
      p.then(
        (v) => {
          this.listeners.delete(onLoss);
          resolve(v);
        },
        (e: unknown) => {
          this.listeners.delete(onLoss);
          reject(e);
        },
      );
    });
  }

  /** Resolves with the loss: at once if it happened, else if it does within `ms`, else undefined. */
  within(ms: number): Promise<MeshtrainError | undefined> {
    if (this.failure) return Promise.resolve(this.failure);
    return new Promise((resolve) => {
      const onLoss = (err: MeshtrainError): void => {
        clearTimeout(timer);
        this.listeners.delete(onLoss);
        resolve(err);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(onLoss);
        resolve(undefined);
      }, ms);
      this.listeners.add(onLoss);
    });
  }
}
