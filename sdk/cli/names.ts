/** Names the command line offers before it loads any command's code. */

/** The demo models `meshtrain demo`, `plan` and `k8s` know. */
export const DEMO_MODELS = ["cnn", "mlp"] as const;
export type DemoModel = (typeof DEMO_MODELS)[number];

/** The Jupyter kernel `meshtrain kernel install` registers. */
export const KERNEL_NAME = "meshtrain-tslab";
