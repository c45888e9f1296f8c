import ts from "typescript";

/**
 * TypeScript's diagnostics for `source` as if it were the file `file` (which need not exist), as
 * a user's strict compile would report them: "LINE: message", the message chain flattened.
 */
export function typeErrors(file: string, source: string): string[] {
  const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, types: [], module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, target: ts.ScriptTarget.ES2022 };
  const host = ts.createCompilerHost(options);
  const original = { getSourceFile: host.getSourceFile, fileExists: host.fileExists, readFile: host.readFile };
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : original.getSourceFile(name, lang, ...rest));
  host.fileExists = (name) => name === file || original.fileExists(name);
  host.readFile = (name) => (name === file ? source : original.readFile(name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : "";
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}
