package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// importState is the state file of an import: which chunks of which
// content are counted. It lives beside the first file
// (FILE.webstats-import), so that an import started again goes on after
// the last chunk counted.
type importState struct {
	ID      string `json:"id"`      // source.id: the format and the lines
	Website uint32 `json:"website"` // where they went
	Target  string `json:"target"`  // the data directory's engine or the server's URL
	Chunk   int    `json:"chunk"`   // lines per chunk
	// ChunkBytes is source.chunkBytes: absent (0) in state files written
	// before the byte bound, whose runs split in lines only.
	ChunkBytes int `json:"chunk_bytes,omitempty"`
	Done       int `json:"done"` // chunks counted, from the first
}

func statePath(s *source) string { return s.files[0] + ".webstats-import" }

// loadState returns the state of an earlier run of this import: the
// same content into the same website (ok false for a new one).
func loadState(path string, want importState) (importState, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return importState{}, false, nil
	}
	if err != nil {
		return importState{}, false, err
	}
	var st importState
	if json.Unmarshal(b, &st) != nil || st.Chunk < 1 || st.ChunkBytes < 0 {
		return importState{}, false, nil
	}
	if st.ID != want.ID || st.Website != want.Website || st.Target != want.Target {
		return importState{}, false, nil
	}
	return st, true, nil
}

// saveState writes the state file atomically (a crash leaves the old or
// the new one).
func saveState(path string, st importState) error {
	b, _ := json.Marshal(st)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// send counts the chunks of s not yet counted, in order, with a progress
// bar (rate and time left) on progress.
func (s *source) send(ctx context.Context, t *target, progress, log io.Writer) error {
	st := importState{ID: s.id, Website: t.website, Target: t.url, Chunk: s.chunk, ChunkBytes: s.chunkBytes}
	if t.e != nil {
		st.Target = t.dir
	}
	path := statePath(s)
	old, ok, err := loadState(path, st)
	if err != nil {
		return fmt.Errorf("import: state file: %w", err)
	}
	done := 0
	if ok {
		if old.Chunk != s.chunk || old.ChunkBytes != s.chunkBytes {
			// The chunks (and their keys) of the first run, whatever
			// -chunk says now: another split would count again what
			// the first run's last chunk counted.
			if old.Chunk != s.chunk {
				fmt.Fprintf(log, "going on with the first run's %d lines a chunk\n", old.Chunk)
			}
			s.chunk, st.Chunk = old.Chunk, old.Chunk
			s.chunkBytes, st.ChunkBytes = old.ChunkBytes, old.ChunkBytes
			if err := s.count(); err != nil {
				return err
			}
		}
		done = old.Done
	}
	if done >= s.chunks {
		// Removing the state file does not import again: a run with the
		// same chunking sends the same keys, which the server answers as
		// repeats (counting nothing) for 7 days, and that is the point.
		fmt.Fprintf(log, "already imported: every chunk of this content was counted (state in %s; the server keeps the chunks' keys 7 days, and a run again with the same -chunk counts nothing again)\n", path)
		return nil
	}
	if done > 0 {
		fmt.Fprintf(log, "resuming after chunk %d of %d (state in %s)\n", done, s.chunks, path)
	}
	bar := progressbar.NewOptions(s.lines,
		progressbar.OptionSetWriter(progress),
		progressbar.OptionSetDescription("importing"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("lines"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(progress) }),
	)
	accepted, idx := 0, 0
	st.Done = done
	err = s.readAhead(ctx, func(body []byte, where []at) error {
		i := idx
		idx++
		if i < done {
			bar.Add(len(where))
			return nil
		}
		n, err := t.sendChunk(ctx, body, s.key(i))
		if err != nil {
			return fmt.Errorf("import: chunk %d (%s:%d to %s:%d): %w", i, where[0].file, where[0].line,
				where[len(where)-1].file, where[len(where)-1].line, err)
		}
		accepted += n
		st.Done = i + 1
		if err := saveState(path, st); err != nil {
			return fmt.Errorf("import: state file: %w", err)
		}
		bar.Add(len(where))
		return nil
	})
	bar.Finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "imported %d lines in %d chunks: %d counted (the others dropped as bots or excluded addresses)\n", s.lines, s.chunks-done, accepted)
	return nil
}

// readAhead is chunks0 with the next chunk read and encoded while fn
// counts the current one: the chunks still reach fn one at a time and in
// order (the import applies each request in time order, and a chunk sent
// before the one before it was counted could split visits), but reading
// the files no longer waits for the server.
func (s *source) readAhead(ctx context.Context, fn func(body []byte, where []at) error) error {
	type chunk struct {
		body  []byte
		where []at
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan chunk, 1)
	read := make(chan error, 1)
	go func() {
		defer close(next)
		read <- s.chunks0(func(body []byte, where []at) error {
			c := chunk{append([]byte(nil), body...), append([]at(nil), where...)}
			select {
			case next <- c:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	for c := range next {
		if err := fn(c.body, c.where); err != nil {
			cancel()
			for range next { // let the reader end
			}
			<-read
			return err
		}
	}
	return <-read
}
