import * as tf from "@tensorflow/tfjs";
import type { OptimizerSpec } from "../protocol/optimizer-spec";

/** The TF.js optimizer an optimizer spec names, as tf.train.* makes it (optimizers travel by name, never as code). */
export function createOptimizer(spec: OptimizerSpec): tf.Optimizer {
  switch (spec.name) {
    case "sgd":
      return tf.train.sgd(spec.learningRate);
    case "momentum":
      return tf.train.momentum(spec.learningRate, spec.momentum, spec.useNesterov);
    case "adam":
      return tf.train.adam(spec.learningRate, spec.beta1, spec.beta2, spec.epsilon);
    case "rmsprop":
      return tf.train.rmsprop(spec.learningRate, spec.decay, spec.momentum, spec.epsilon, spec.centered);
    case "adagrad":
      return tf.train.adagrad(spec.learningRate, spec.initialAccumulatorValue);
    case "adadelta":
      return tf.train.adadelta(spec.learningRate, spec.rho, spec.epsilon);
    case "adamax":
      return tf.train.adamax(spec.learningRate, spec.beta1, spec.beta2, spec.epsilon, spec.decay);
  }
}
