package pages

import (
	"bufio"
	"io"
	"os"
	"strings"

	"github.com/webstats/webstats/httpd/internal/peerimport"
)

// eachUmami reads Umami's uploaded tables, told apart by their headers:
// event_data and session first, then website_event (as the command
// line's import does).
func eachUmami(files []upload, add func([]byte, at) error) error {
	var sessions, events, data []upload
	for _, u := range files {
		head, err := headerOf(u.path)
		if err != nil {
			return err
		}
		switch {
		case strings.Contains(head, "url_path"):
			events = append(events, u)
		case strings.Contains(head, "data_key"), strings.Contains(head, "event_key"):
			data = append(data, u)
		default:
			sessions = append(sessions, u)
		}
	}
	if len(sessions) == 0 || len(events) == 0 {
		return &uploadError{"Umami needs the session table and the website_event table (and, for event properties, event_data), each a CSV file with a header: choose them together."}
	}
	props := make(map[string][][2]string)
	sess := make(map[string]peerimport.UmamiSession)
	for _, u := range append(data, sessions...) {
		f, err := os.Open(u.path)
		if err != nil {
			return err
		}
		if contains(data, u) {
			var m map[string][][2]string
			if m, err = peerimport.UmamiEventData(u.name, f); err == nil {
				for k, v := range m {
					props[k] = append(props[k], v...)
				}
			}
		} else {
			var m map[string]peerimport.UmamiSession
			if m, err = peerimport.UmamiSessions(u.name, f); err == nil {
				for k, v := range m {
					sess[k] = v
				}
			}
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	for _, u := range events {
		f, err := os.Open(u.path)
		if err != nil {
			return err
		}
		_, err = peerimport.UmamiEvents(u.name, f, sess, props, encodeTo(u.name, add))
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func contains(list []upload, u upload) bool {
	for _, v := range list {
		if v == u {
			return true
		}
	}
	return false
}

// headerOf returns the first line of a file, at most 64 KiB.
func headerOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := bufio.NewReaderSize(io.LimitReader(f, 64<<10), 64<<10).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return b, nil
}
