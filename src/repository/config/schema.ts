/**
 * The reflected schema of `inference.ModelConfig`, loaded once from
 * proto/model_config.proto (the one source of truth) with protobufjs. The
 * text-format parser, the default filler and the JSON renderer all walk it.
 */
import fs from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs';

let cachedRoot: protobuf.Root | undefined;

/**
 * The repository's proto/ directory. Compiled code lives at
 * <repo>/dist*\/src/repository/config/ (any out dir name), sources at
 * <repo>/src/repository/config/, so walk up to the first directory holding
 * package.json and proto/model_config.proto.
 */
export function protoDir(): string {
  let dir = __dirname;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'proto', 'model_config.proto'))) {
      return path.join(dir, 'proto');
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  // Last resort: the layout relative to dist/src/repository/config.
  return path.resolve(__dirname, '../../../../proto');
}

/** Path of model_config.proto (also for @grpc/proto-loader includeDirs). */
export function modelConfigProtoPath(): string {
  return path.join(protoDir(), 'model_config.proto');
}

/** The protobufjs root holding package `inference`, field names kept snake_case. */
export function schemaRoot(): protobuf.Root {
  if (cachedRoot === undefined) {
    const root = new protobuf.Root();
    root.loadSync(modelConfigProtoPath(), { keepCase: true });
    root.resolveAll();
    cachedRoot = root;
  }
  return cachedRoot;
}

/** A message type by name, with or without the `inference.` prefix. */
export function schemaType(name: string): protobuf.Type {
  const full = name.startsWith('inference.') ? name : `inference.${name}`;
  return schemaRoot().lookupType(full);
}

/** The reflected `inference.ModelConfig`. */
export function modelConfigType(): protobuf.Type {
  return schemaType('inference.ModelConfig');
}

/** Full name without protobufjs' leading dot: `inference.ModelInput`. */
export function typeName(t: protobuf.ReflectionObject): string {
  return t.fullName.startsWith('.') ? t.fullName.slice(1) : t.fullName;
}
