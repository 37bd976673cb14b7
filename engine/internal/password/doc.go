// Package password hashes and checks passwords with argon2id (PHC
// strings), at most MaxHashes at once: each hash holds 19 MiB for tens of
// milliseconds, so a flood of password attempts could exhaust memory
// (SPEC §13). One Hasher serves a process's website and account
// passwords alike; a hash that cannot start in time fails with ErrBusy.
package password
