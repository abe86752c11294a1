import type { AnyRoute } from '../http/route.js';

export const changeRoutes: AnyRoute[] = [];
