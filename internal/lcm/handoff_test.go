package lcm

import (
	"fmt"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// A handed-over instance is taken once; what nobody takes is dropped after
// two generations, so operations run by other processes cost no memory.
func TestHandoffTakesOnceAndForgets(t *testing.T) {
	var h handoff
	in := &model.VnfInstance{}
	h.put("a", handed{in: in})
	if v := h.take("a"); v == nil || v.in != in {
		t.Fatalf("take a: %v", v)
	}
	if h.take("a") != nil {
		t.Fatal("taken twice")
	}
	h.put("old", handed{in: in})
	for i := range handoffGeneration {
		h.put(fmt.Sprint(i), handed{in: in})
	}
	if h.take("old") == nil {
		t.Fatal("the previous generation is still there")
	}
	h.put("kept", handed{in: in})
	for i := range 2 * handoffGeneration {
		h.put(fmt.Sprint("x", i), handed{in: in})
	}
	if h.take("kept") != nil {
		t.Fatal("an entry outlived two generations")
	}
	if n := len(h.cur) + len(h.old); n > 2*handoffGeneration {
		t.Fatalf("%d entries kept", n)
	}
}
