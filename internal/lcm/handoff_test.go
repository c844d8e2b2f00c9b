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
	if v, ok := h.take("a"); !ok || v.in != in {
		t.Fatalf("take a: %v %v", v, ok)
	}
	if _, ok := h.take("a"); ok {
		t.Fatal("taken twice")
	}
	h.put("old", handed{in: in})
	for i := range handoffGeneration {
		h.put(fmt.Sprint(i), handed{in: in})
	}
	if _, ok := h.take("old"); !ok {
		t.Fatal("the previous generation is still there")
	}
	h.put("kept", handed{in: in})
	for i := range 2 * handoffGeneration {
		h.put(fmt.Sprint("x", i), handed{in: in})
	}
	if _, ok := h.take("kept"); ok {
		t.Fatal("an entry outlived two generations")
	}
	if n := len(h.cur) + len(h.old); n > 2*handoffGeneration {
		t.Fatalf("%d entries kept", n)
	}
}
