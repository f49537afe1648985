/**
 * The load-failure lines the server logs and `nodetron lint` prints, made
 * in one place so both say the same words.
 */

/** `failed to load '<m>': <reason>`, or with `version <v>` when one version failed. */
export function loadFailedText(model: string, reason: string, version?: number): string {
  return version === undefined ? `failed to load '${model}': ${reason}` : `failed to load '${model}' version ${version}: ${reason}`;
}

/** A model folder name found in more than one repository (Triton refuses it). */
export function duplicateModelText(name: string, repositories: readonly string[]): string {
  return `failed to poll model '${name}': not unique across all model repositories (${repositories.join(', ')})`;
}
