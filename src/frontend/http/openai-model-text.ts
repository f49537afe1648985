/**
 * A model's text side for the OpenAI-compatible frontend, read from its
 * folder in the repository: the chat template (`tokenizer_config.json`
 * `chat_template`, rendered with @huggingface/jinja with `messages`,
 * `add_generation_prompt`, `bos_token`, `eos_token`) and the tokenizer
 * (`tokenizer.json`, @huggingface/tokenizers) that counts `usage` tokens.
 * Without them, documented fallbacks: the chat prompt is one
 * `<role>: <content>` line per message then `assistant:`, and a token is a
 * whitespace-separated word. Read once per model folder and HTTP thread
 * (again after a reload, or when a file changed: ModelTexts),
 * asynchronously: when a snapshot brings the model (ModelTexts.warm) or at
 * its first /v1 request, so a large
 * tokenizer.json is not read on the thread's event loop while other
 * connections wait (the JSON parse and the tokenizer's build still run on
 * it, once).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { OpenAIError, type ChatMessage } from './openai-request';

interface JinjaTemplate {
  render(items: Record<string, unknown>): string;
}
interface HfTokenizer {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: unknown[] };
  decode(ids: readonly number[], options?: { skip_special_tokens?: boolean }): string;
}
const { Template } = require('@huggingface/jinja') as { Template: new (source: string) => JinjaTemplate };
const { Tokenizer } = require('@huggingface/tokenizers') as { Tokenizer: new (json: object, config: object) => HfTokenizer };

export class ModelText {
  private constructor(
    private readonly template: JinjaTemplate | undefined,
    private readonly tokens: Record<string, string>,
    private readonly tokenizer: HfTokenizer | undefined,
  ) {}

  /** Whether the counts come from the model's tokenizer (else words). */
  get hasTokenizer(): boolean {
    return this.tokenizer !== undefined;
  }

  static readonly NONE = new ModelText(undefined, {}, undefined);

  static async load(dir: string, model: string): Promise<ModelText> {
    const [configText, tokenizerText] = await Promise.all([readText(path.join(dir, 'tokenizer_config.json')), readText(path.join(dir, 'tokenizer.json'))]);
    const config = parseJson(configText, 'tokenizer_config.json', model);
    let template: JinjaTemplate | undefined;
    const tokens: Record<string, string> = {};
    if (config !== undefined) {
      const source = config.chat_template;
      if (typeof source === 'string') {
        try {
          template = new Template(source);
        } catch (err) {
          throw fileError(model, 'tokenizer_config.json', `its chat_template does not parse: ${(err as Error).message}`);
        }
      }
      for (const k of ['bos_token', 'eos_token']) {
        const v = config[k];
        if (typeof v === 'string') tokens[k] = v;
        else if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string')
          tokens[k] = (v as { content: string }).content;
      }
    }
    const json = parseJson(tokenizerText, 'tokenizer.json', model);
    let tokenizer: HfTokenizer | undefined;
    if (json !== undefined) {
      try {
        tokenizer = new Tokenizer(json, config ?? {});
      } catch (err) {
        throw fileError(model, 'tokenizer.json', `it is not a tokenizer @huggingface/tokenizers can load: ${(err as Error).message}`);
      }
    }
    return new ModelText(template, tokens, tokenizer);
  }

  /** The chat prompt for `messages`, ending where the assistant's answer starts. */
  renderChat(messages: readonly ChatMessage[]): string {
    if (this.template === undefined) return fallbackChatPrompt(messages);
    try {
      return this.template.render({
        messages,
        add_generation_prompt: true,
        bos_token: this.tokens.bos_token ?? '',
        eos_token: this.tokens.eos_token ?? '',
      });
    } catch (err) {
      // A template's raise_exception(...) lands here too, with its message.
      throw new OpenAIError(400, `the model's chat template (tokenizer_config.json) could not render these messages: ${(err as Error).message}`, 'messages');
    }
  }

  count(text: string): number {
    if (this.tokenizer !== undefined) return this.tokenizer.encode(text, { add_special_tokens: false }).ids.length;
    return wordCount(text);
  }

  /** Token ids back to text (a token-id prompt), or undefined when the model has no tokenizer.json. */
  decode(ids: readonly number[]): string | undefined {
    return this.tokenizer?.decode(ids, { skip_special_tokens: false });
  }
}

/** The chat prompt of a model without a chat template: one `<role>: <content>` line per message, then `assistant:`. */
export function fallbackChatPrompt(messages: readonly ChatMessage[]): string {
  return `${messages.map((m) => `${m.role}: ${m.content}\n`).join('')}assistant:`;
}

/** The token count of a model without tokenizer.json: its whitespace-separated words. */
export function wordCount(text: string): number {
  const t = text.trim();
  return t === '' ? 0 : t.split(/\s+/).length;
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

function parseJson(text: string | undefined, file: string, model: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw fileError(model, file, 'it is not a JSON object');
}

function fileError(model: string, file: string, why: string): OpenAIError {
  return new OpenAIError(
    500,
    `model '${model}': ${file} in its folder cannot be used (${why}); fix or remove the file and reload the model`,
    null,
    null,
    'server_error',
  );
}

/** How long a model folder's files are taken as unchanged after they were last looked at (ms). */
export const RECHECK_MS = 1000;

/** A model folder's text: what it was read from (its files' mtimes and sizes, the model's load), and when they were last looked at. */
interface Cached {
  stamp: string;
  load: number;
  text: Promise<ModelText>;
  checkedMs: number;
}

/**
 * One ModelText per model folder on this thread. A request names the
 * model's load (ModelView.loads, from its snapshot): a load other than the
 * text's (a reload) reads the files again, whatever they look like. Within
 * one load, a request takes the text read before without looking at the
 * files when they were looked at less than RECHECK_MS ago; else it stats
 * them and reads them again when either changed (mtime or size). A read or
 * a look in progress is shared by the requests that wait for it.
 */
export class ModelTexts {
  private readonly byDir = new Map<string, Cached>();
  /** The look at a folder's files in progress, for the load it was asked for. */
  private readonly looking = new Map<string, { load: number; text: Promise<ModelText> }>();

  constructor(private readonly nowMs: () => number = Date.now) {}

  get(dir: string | undefined, model: string, load = 0): Promise<ModelText> {
    if (dir === undefined) return Promise.resolve(ModelText.NONE);
    const had = this.byDir.get(dir);
    if (had !== undefined && had.load === load && this.nowMs() - had.checkedMs < RECHECK_MS) return had.text;
    const look = this.looking.get(dir);
    return look !== undefined && look.load === load ? look.text : this.look(dir, model, load);
  }

  /**
   * A new snapshot: the text of each model it serves is read now (a model
   * new or reloaded: before its first request); folders of models it no
   * longer has are forgotten. Errors wait for the first request to report them.
   */
  warm(models: readonly { dir: string | undefined; name: string; load?: number }[]): void {
    const dirs = new Set(models.map((m) => m.dir));
    for (const dir of this.byDir.keys()) if (!dirs.has(dir)) this.byDir.delete(dir);
    for (const m of models) this.get(m.dir, m.name, m.load).catch(() => undefined);
  }

  private look(dir: string, model: string, load: number): Promise<ModelText> {
    const started = this.nowMs();
    const text = stampOf(dir).then((stamp) => {
      const had = this.byDir.get(dir);
      if (had !== undefined && had.stamp === stamp && had.load === load) {
        had.checkedMs = started;
        return had.text;
      }
      const read = ModelText.load(dir, model);
      this.byDir.set(dir, { stamp, load, text: read, checkedMs: started });
      // A failed read is not kept: the next request reads the files again.
      read.catch(() => {
        if (this.byDir.get(dir)?.text === read) this.byDir.delete(dir);
      });
      return read;
    });
    this.looking.set(dir, { load, text });
    const done = (): void => {
      if (this.looking.get(dir)?.text === text) this.looking.delete(dir);
    };
    text.then(done, done);
    return text;
  }
}

/** A folder's tokenizer_config.json and tokenizer.json as they are now: mtime and size each, or '-' when absent. */
async function stampOf(dir: string): Promise<string> {
  const parts = await Promise.all(
    ['tokenizer_config.json', 'tokenizer.json'].map(async (f) => {
      const st = await fs.stat(path.join(dir, f)).catch(() => undefined);
      return st === undefined ? '-' : `${st.mtimeMs}:${st.size}`;
    }),
  );
  return parts.join(' ');
}
