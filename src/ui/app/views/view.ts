import type { Me } from '../lib/api';
import type { Place } from '../lib/router';

/** What the shell hands every view: who is signed in, and where in the interface they are. */
export interface ViewProps {
  me: Me;
  place: Place;
}
