/** What is wrong inside a tree model file; the loader adds the file, the model and what to do. */
export class FilModelError extends Error {}
