/** The tenant that exists after migration (sql/0001_core.sql). */
export const DEFAULT_TENANT_ID = '00000000-0000-4000-8000-000000000001';
