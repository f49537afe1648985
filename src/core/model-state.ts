/**
 * Model version readiness: a state plus a reason, never a boolean, with one
 * transition function (STYLE.md item 5). States and their names are
 * Triton's (repository index `state`).
 */
import { ServerError } from './errors';

export type ModelState = 'UNAVAILABLE' | 'LOADING' | 'READY' | 'UNLOADING';

export interface Readiness {
  state: ModelState;
  reason: string;
}

const ALLOWED: Record<ModelState, readonly ModelState[]> = {
  UNAVAILABLE: ['LOADING'],
  LOADING: ['READY', 'UNAVAILABLE'],
  READY: ['UNLOADING'],
  UNLOADING: ['UNAVAILABLE'],
};

/** Move to `to` with `reason`; an illegal move is an INTERNAL error naming both states. */
export function transition(current: Readiness, to: ModelState, reason: string, what: string): Readiness {
  if (!ALLOWED[current.state].includes(to)) {
    throw new ServerError('INTERNAL', `illegal state transition for ${what}: ${current.state} -> ${to}`);
  }
  return { state: to, reason };
}
