// Command alloc-oracle runs the upstream DRA allocator library
// (k8s.io/dynamic-resource-allocation/structured, pinned in go.mod) on scenarios read from
// stdin, one JSON object per line, and prints one JSON answer per line on stdout.
//
// Scenario: {"node": core/v1 Node, "classes": [DeviceClass], "slices": [ResourceSlice],
// "claims": [ResourceClaim], "allocated": [{"driver","pool","device"}]} (resource.k8s.io/v1).
// Answer: {"allocations": [AllocationResult] | null, "error": "..."}: allocations is null
// when the claims do not fit together on the node; error is set when Allocate fails.
//
// The features are the ones kube-scheduler 1.36 passes with its default gates
// (dynamicresources.AllocatorFeatures: ListTypeAttributes is never passed), so the library
// picks the variant the scheduler runs by default; the CEL cache is built as the plugin
// builds it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

type deviceRef struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Device string `json:"device"`
}

type scenario struct {
	Node      v1.Node                     `json:"node"`
	Classes   []resourceapi.DeviceClass   `json:"classes"`
	Slices    []resourceapi.ResourceSlice `json:"slices"`
	Claims    []resourceapi.ResourceClaim `json:"claims"`
	Allocated []deviceRef                 `json:"allocated"`
}

type answer struct {
	Allocations []resourceapi.AllocationResult `json:"allocations"`
	Error       string                         `json:"error,omitempty"`
	Variant     string                         `json:"variant"`
}

type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclass"), name)
}

// features: kube-scheduler 1.36's defaults (all DRA gates on except DRAListTypeAttributes).
var features = structured.Features{
	AdminAccess:            true,
	PrioritizedList:        true,
	PartitionableDevices:   true,
	DeviceTaints:           true,
	DeviceBindingAndStatus: true,
	ConsumableCapacity:     true,
}

var celCache = cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})

func run(ctx context.Context, s *scenario) answer {
	classes := classLister{}
	for i := range s.Classes {
		classes[s.Classes[i].Name] = &s.Classes[i]
	}
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, d := range s.Allocated {
		state.AllocatedDevices.Insert(structured.MakeDeviceID(d.Driver, d.Pool, d.Device))
	}
	slices := make([]*resourceapi.ResourceSlice, len(s.Slices))
	for i := range s.Slices {
		slices[i] = &s.Slices[i]
	}
	claims := make([]*resourceapi.ResourceClaim, len(s.Claims))
	for i := range s.Claims {
		claims[i] = &s.Claims[i]
	}
	allocator, err := structured.NewAllocator(ctx, features, state, classes, slices, celCache)
	if err != nil {
		return answer{Error: err.Error()}
	}
	// The variant picked ("stable", "incubating", "experimental"): Channel() of the internal
	// interface, whose result type is internal, read by reflection.
	variant := ""
	if m := reflect.ValueOf(allocator).MethodByName("Channel"); m.IsValid() && m.Type().NumIn() == 0 {
		variant = fmt.Sprint(m.Call(nil)[0].Interface())
	}
	results, err := allocator.Allocate(ctx, &s.Node, claims)
	if err != nil {
		return answer{Error: err.Error(), Variant: variant}
	}
	return answer{Allocations: results, Variant: variant}
}

func main() {
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var s scenario
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			fmt.Fprintf(os.Stderr, "alloc-oracle: scenario is not valid JSON: %v\n", err)
			os.Exit(1)
		}
		if err := enc.Encode(run(ctx, &s)); err != nil {
			fmt.Fprintf(os.Stderr, "alloc-oracle: %v\n", err)
			os.Exit(1)
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "alloc-oracle: reading stdin: %v\n", err)
		os.Exit(1)
	}
}
