package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestSubscriptionsOverHTTP(t *testing.T) {
	e := newEnv(t, 2, false)
	nfvo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			if id, pw, ok := r.BasicAuth(); !ok || id != "c" || pw != "oauth-secret-1" || r.FormValue("grant_type") != "client_credentials" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"tok","token_type":"bearer","expires_in":60}`))
			return
		}
		if a := r.Header.Get("Authorization"); r.URL.Path == "/cb" && a != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer nfvo.Close()
	body := `{"callbackUri":"` + nfvo.URL + `/cb","filter":{"vnfInstanceSubscriptionFilter":{"vnfdIds":["d1"]},"operationTypes":["INSTANTIATE"]},
		"authentication":{"authType":["OAUTH2_CLIENT_CREDENTIALS"],"paramsOauth2ClientCredentials":{"clientId":"c","clientPassword":"oauth-secret-1","tokenEndpoint":"` + nfvo.URL + `/token"}}}`
	r := e.expect(e.do("POST", "/vnflcm/v1/subscriptions", body), 201)
	doc := r.json(t)
	id := doc["id"].(string)
	if r.Header.Get("Location") != e.srv.URL+"/vnflcm/v1/subscriptions/"+id || doc["callbackUri"] != nfvo.URL+"/cb" || doc["authentication"] != nil {
		t.Fatalf("created subscription: %v (Location %s)", doc, r.Header.Get("Location"))
	}
	dup := e.expect(e.do("POST", "/vnflcm/v1/subscriptions", body), 303)
	if dup.Header.Get("Location") != r.Header.Get("Location") || len(dup.body) != 0 {
		t.Fatalf("303: Location %q body %q", dup.Header.Get("Location"), dup.body)
	}
	for i := 0; i < 2; i++ {
		e.expect(e.do("POST", "/vnflcm/v1/subscriptions", `{"callbackUri":"`+nfvo.URL+`/cb`+string(rune('a'+i))+`"}`), 201)
	}
	e.expect(e.do("GET", "/vnflcm/v1/subscriptions/"+id, ""), 200)
	page := e.expect(e.do("GET", "/vnflcm/v1/subscriptions", ""), 200)
	if len(page.list(t)) != 2 || page.Header.Get("Link") == "" {
		t.Fatalf("first page: %d items, Link %q", len(page.list(t)), page.Header.Get("Link"))
	}
	f := e.expect(e.do("GET", "/vnflcm/v1/subscriptions?filter="+url.QueryEscape("(eq,callbackUri,"+nfvo.URL+"/cba)"), ""), 200).list(t)
	if len(f) != 1 {
		t.Fatalf("filter by callbackUri: %d", len(f))
	}
	e.expect(e.do("GET", "/vnflcm/v1/subscriptions?filter=(eq,nope,1)", ""), 400)
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer dead.Close()
	if d := e.expect(e.do("POST", "/vnflcm/v1/subscriptions", `{"callbackUri":"`+dead.URL+`"}`), 422).json(t)["detail"].(string); !strings.Contains(d, "204") {
		t.Fatalf("failed callback test detail: %s", d)
	}
	e.expect(e.do("POST", "/vnflcm/v1/subscriptions", `{"callbackUri":"not a url"}`), 400)
	e.expect(e.do("PUT", "/vnflcm/v1/subscriptions/"+id, ""), 405)
	e.expect(e.do("DELETE", "/vnflcm/v1/subscriptions/"+id, ""), 204)
	e.expect(e.do("GET", "/vnflcm/v1/subscriptions/"+id, ""), 404)
	e.expect(e.do("DELETE", "/vnflcm/v1/subscriptions/"+id, ""), 404)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.bodies {
		if strings.Contains(b, "oauth-secret-1") {
			t.Fatal("a response contains the subscription's client password")
		}
	}
}
