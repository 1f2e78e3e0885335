package main

import (
	"os"
	"strings"
	"testing"
)

func TestQuietSDKLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		quiet bool
	}{
		{"no logs asked for", nil, true},
		{"only a log path", map[string]string{"TF_LOG_PATH": "/tmp/tf.log"}, true},
		{"TF_LOG", map[string]string{"TF_LOG": "TRACE"}, false},
		{"provider logs", map[string]string{"TF_LOG_PROVIDER": "DEBUG"}, false},
		{"SDK framework logs", map[string]string{"TF_LOG_SDK_FRAMEWORK": "TRACE"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range os.Environ() { // none of the machine's own settings; t.Setenv restores them
				if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TF_LOG") {
					t.Setenv(name, "")
					os.Unsetenv(name)
				}
			}
			for _, name := range sdkLogLevels {
				t.Setenv(name, "") // restored after the case
				os.Unsetenv(name)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			quietSDKLogs()
			for _, name := range sdkLogLevels {
				got, set := os.LookupEnv(name)
				switch {
				case tc.quiet && got != "OFF":
					t.Errorf("%s = %q, want OFF", name, got)
				case !tc.quiet && set && got != tc.env[name]:
					t.Errorf("%s = %q, want it left as it was (%q): logs were asked for", name, got, tc.env[name])
				}
			}
		})
	}
}
