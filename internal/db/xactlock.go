package db

import "gorm.io/gorm"

// LockUntilCommit takes the lock named key until tx ends: a PostgreSQL
// transaction-scoped advisory lock, for rules that read rows other than the
// ones a write locks (a tenant's blocks links, its parent tree). On SQLite
// it does nothing, since SQLite runs one writer at a time.
func LockUntilCommit(tx *gorm.DB, key string) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	return tx.Exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, key).Error
}
