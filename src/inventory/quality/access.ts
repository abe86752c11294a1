import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { forbidden } from '../../platform/errors.js';

/**
 * Settings and rules shape everyone's scores in the tenant: only a principal holding all its data
 * changes them (403 `scoped`), whatever its permissions.
 */
export function mayShapeScores(principal: Principal, what: 'settings' | 'rules'): void {
  if (!seesAllData(principal))
    throw forbidden(`Quality ${what} apply to the whole tenant: only a principal holding all its data changes them`, {
      reason: 'scoped',
    });
}
