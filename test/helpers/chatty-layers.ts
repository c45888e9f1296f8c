import * as tf from "@tensorflow/tfjs";

/**
 * Layers that print, as users' layers do while they are being debugged; loaded on workers with
 * .modules([...]) or `meshtrain worker --module`. Calls are counted per process.
 */
let calls = 0;

/** Passes its input through; each call prints "chatty call N" on stdout, and every third also "chatty warning N" on stderr. */
export class Chatty extends tf.layers.Layer {
  static className = "Chatty";

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    calls++;
    console.log(`chatty call ${calls}`);
    if (calls % 3 === 0) console.warn(`chatty warning ${calls}`);
    return tf.clone(Array.isArray(inputs) ? inputs[0]! : inputs);
  }
}

/**
 * Passes its input through until call `at` in a process whose environment has
 * MESHTRAIN_TEST_DOOMED=1: then it says so on stderr and the process dies, by exit(3), or by an
 * exception thrown outside any step (uncaught), as `how` says.
 */
export class Doomed extends tf.layers.Layer {
  static className = "Doomed";
  readonly at: number;
  readonly how: "exit" | "throw";

  constructor(config: { at?: number; how?: "exit" | "throw"; name?: string } = {}) {
    super(config);
    this.at = config.at ?? 3;
    this.how = config.how ?? "exit";
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    calls++;
    if (calls === this.at && process.env.MESHTRAIN_TEST_DOOMED === "1") {
      if (this.how === "exit") {
        process.stderr.write(`doomed: giving up at call ${calls}\n`);
        process.exit(3);
      }
      // The call number now: another call may come before the timer fires.
      const at = calls;
      setTimeout(() => {
        throw new Error(`doomed: an uncaught failure at call ${at}`);
      }, 0);
    }
    return tf.clone(Array.isArray(inputs) ? inputs[0]! : inputs);
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), at: this.at, how: this.how };
  }
}

tf.serialization.registerClass(Chatty);
tf.serialization.registerClass(Doomed);
