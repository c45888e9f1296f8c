/** The SDK's version, as in package.json; workers report it when they join. */
export const VERSION = "0.1.0";
