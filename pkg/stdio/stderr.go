package stdio

import (
	"bufio"
	"errors"
	"io"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// Bounds of a process's stderr in the log.
const (
	// MaxStderrLine bounds one logged line; the rest of a longer line is
	// dropped (the entry says truncated).
	MaxStderrLine = 1024
	// MaxStderrPerSecond bounds the lines logged per second; the lines
	// over it are counted and the count logged with the next line.
	MaxStderrPerSecond = 20
)

// logStderr logs r a line at a time until it ends, within the bounds.
func logStderr(r io.Reader, log zerolog.Logger, now func() time.Time) {
	br := bufio.NewReaderSize(r, MaxStderrLine)
	var window time.Time
	logged, dropped := 0, 0
	for {
		line, err := br.ReadSlice('\n')
		truncated := false
		if errors.Is(err, bufio.ErrBufferFull) {
			truncated = true
			line = append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
				_, err = br.ReadSlice('\n')
			}
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		if len(line) > 0 || truncated {
			t := now()
			if t.Sub(window) >= time.Second {
				window, logged = t, 0
			}
			if logged < MaxStderrPerSecond {
				logged++
				ev := log.Info().Bool("stderr", true)
				if truncated {
					ev = ev.Bool("truncated", true)
				}
				if dropped > 0 {
					ev = ev.Int("dropped_lines", dropped)
					dropped = 0
				}
				ev.Msg(validUTF8(line))
			} else {
				dropped++
			}
		}
		if err != nil {
			if dropped > 0 {
				log.Info().Bool("stderr", true).Int("dropped_lines", dropped).Msg("")
			}
			return
		}
	}
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string([]rune(string(b)))
}
