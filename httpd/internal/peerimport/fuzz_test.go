package peerimport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/httpd/internal/importline"
	"github.com/webstats/webstats/httpd/internal/peerimport"
)

// checkRead checks what a reader did with a file: an error is an *Error
// naming the file and a line ≥ 1, and every line it gave is JSON the
// import endpoint can read (it may refuse a value, never the shape).
func checkRead(t *testing.T, lines []importline.Line, err error) {
	var pe *peerimport.Error
	if err != nil && (!errors.As(err, &pe) || pe.File != "f.csv" || pe.Line < 1) {
		t.Fatalf("error %v (%T): want a *peerimport.Error of f.csv at a line", err, err)
	}
	for _, l := range lines {
		b, jerr := json.Marshal(l)
		if jerr != nil {
			t.Fatal(jerr)
		}
		cerr := httpd.CheckImport(b, time.Now().Add(100*365*24*time.Hour))
		var ie *httpd.ImportError
		if cerr != nil && !errors.As(cerr, &ie) {
			t.Fatalf("line %s: %v", b, cerr)
		}
		if ie != nil {
			for _, f := range ie.Fields {
				if strings.HasSuffix(f.Field, ".0") || f.Field == "events.0" {
					t.Fatalf("line %s: not a JSON object: %v", b, f)
				}
			}
		}
	}
}

func FuzzGoatCounter(f *testing.F) {
	head := "2Path,Title,Event,UserAgent,Browser,System,Session,Bot,Referrer,Referrer scheme,Screen size,Location,FirstVisit,Date\n"
	f.Add(head + `/a,T,false,,Chrome 120,Windows 10,s1,0,news.ycombinator.com/item,h,"1920,1080,1",US-CA,true,2026-10-01T10:00:00Z` + "\n")
	f.Add(head + `signup,T,true,,Firefox,Linux,s2,0,newsletter,c,,DE,false,2026-10-01T10:00:00Z` + "\n")
	f.Add(head + `/b,T,false,Mozilla/5.0,,,,3,,,,,false,2026-10-01T10:00:00+02:00` + "\n")
	f.Add("2Path\n\"unterminated")
	f.Fuzz(func(t *testing.T, file string) {
		var lines []importline.Line
		_, _, err := peerimport.GoatCounter("f.csv", strings.NewReader(file), func(l importline.Line, _ int) error {
			lines = append(lines, l)
			return nil
		})
		checkRead(t, lines, err)
	})
}

func FuzzUmami(f *testing.F) {
	f.Add("session_id,browser,os,device,screen,language,country,subdivision1,city\ns1,chrome,Mac OS,laptop,1920x1080,en-US,US,US-CA,San Francisco\n",
		"session_id,created_at,url_path,url_query,hostname,referrer_domain,referrer_path,event_type,event_name\ns1,2026-10-01 10:00:00.123,/a,x=1,example.com,t.co,/x,1,\ns1,2026-10-01T10:05:00Z,/b,,,,,2,Signup\n")
	f.Add("session_id\n\"", "session_id,created_at,url_path,event_type\n")
	f.Fuzz(func(t *testing.T, sessions, events string) {
		m, err := peerimport.UmamiSessions("f.csv", strings.NewReader(sessions))
		checkRead(t, nil, err)
		if err != nil {
			return
		}
		var lines []importline.Line
		_, err = peerimport.UmamiEvents("f.csv", bytes.NewReader([]byte(events)), m, nil, func(l importline.Line, _ int) error {
			lines = append(lines, l)
			return nil
		})
		checkRead(t, lines, err)
	})
}
