package snapshot

import (
	"encoding/binary"
	"fmt"
)

// Imported layers (SPEC §14): the daily aggregates of an import from a
// peer's export (Plausible's CSV zip), kept beside a website's days and not
// merged into them. An import is a run of opaque chunks under
//
//	0x04 website(4) 0x05 import(4) chunk(4)
//
// (import ids start at 1; chunk 0 of "import 0" holds the last id given,
// 4 bytes big-endian, so that a deleted import's id is not given again)
// so that the website's DeleteWebsite, View.Website and ReplaceWebsite
// carry them with the rest of the website, and DeleteImport is one
// DeleteRange. Added without a format version change: older stores simply
// have no such keys.

// subImport is the sub-family of imported layers under prefixWebsite.
const subImport byte = 0x05

// importKeyLen is the length of an import chunk key.
const importKeyLen = websiteKeyLen + 4

// importPrefix is the prefix of every chunk of import id of website.
func importPrefix(website, id uint32) []byte { return websiteKey(website, subImport, id) }

// importKey is the key of chunk n of import id of website.
func importKey(website, id, n uint32) []byte {
	return binary.BigEndian.AppendUint32(importPrefix(website, id), n)
}

// parseImportKey returns the import and chunk of an import chunk key.
func parseImportKey(key []byte) (id, n uint32, err error) {
	if len(key) != importKeyLen || key[0] != prefixWebsite || key[5] != subImport {
		return 0, 0, malformedKey("import", key)
	}
	return binary.BigEndian.Uint32(key[6:10]), binary.BigEndian.Uint32(key[10:]), nil
}

// PutImport stores import id of website as chunks (chunk n is chunks[n]),
// replacing whatever the import held, in one durable batch: a reader sees
// all of it or none. It records id as the last id given (ScanImports
// passes it as import 0).
func (s *Store) PutImport(website, id uint32, chunks [][]byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("put import %d of website %d", id, website)
	b := s.db.NewBatch()
	defer b.Close()
	p := importPrefix(website, id)
	if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
		return wrap(op, err)
	}
	for n, c := range chunks {
		if err := b.Set(importKey(website, id, uint32(n)), c, nil); err != nil {
			return wrap(op, err)
		}
	}
	if err := b.Set(importKey(website, 0, 0), binary.BigEndian.AppendUint32(nil, id), nil); err != nil {
		return wrap(op, err)
	}
	return wrap(op, s.commit(b))
}

// DeleteImport removes import id of website, durably.
func (s *Store) DeleteImport(website, id uint32) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	b := s.db.NewBatch()
	defer b.Close()
	p := importPrefix(website, id)
	err := b.DeleteRange(p, prefixEnd(p), nil)
	if err == nil {
		err = s.commit(b)
	}
	return wrap(fmt.Sprintf("delete import %d of website %d", id, website), err)
}

// ScanImports calls fn for every import chunk of website, by import then
// chunk in ascending order. data is valid only during the call to fn; fn's
// error is returned as is.
func (s *Store) ScanImports(website uint32, fn func(id, chunk uint32, data []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	p := websiteSubPrefix(website, subImport)
	return s.scan(fmt.Sprintf("scan imports of website %d", website), p, prefixEnd(p), func(key, val []byte) error {
		id, n, err := parseImportKey(key)
		if err != nil {
			return err
		}
		return fn(id, n, val)
	})
}

// ImportOp is one write of WriteImports: chunk Chunk of import ID set to
// Value, or, with Delete, every chunk of import ID removed.
type ImportOp struct {
	ID, Chunk uint32
	Value     []byte
	Delete    bool
}

// WriteImports applies ops to the imported layer of website, in order, in
// one durable batch (cluster mode writes an import message by message).
// Unlike PutImport it records no last id: an op on import 0 does.
func (s *Store) WriteImports(website uint32, ops []ImportOp) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("write imports of website %d", website)
	b := s.db.NewBatch()
	defer b.Close()
	for _, o := range ops {
		var err error
		if o.Delete {
			p := importPrefix(website, o.ID)
			err = b.DeleteRange(p, prefixEnd(p), nil)
		} else {
			err = b.Set(importKey(website, o.ID, o.Chunk), o.Value, nil)
		}
		if err != nil {
			return wrap(op, err)
		}
	}
	return wrap(op, s.commit(b))
}

// GetImport returns a copy of chunk n of import id of website, or
// ErrNotFound.
func (s *Store) GetImport(website, id, n uint32) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	return s.getCopy(fmt.Sprintf("get import %d chunk %d of website %d", id, n, website), importKey(website, id, n))
}
