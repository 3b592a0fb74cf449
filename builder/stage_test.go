package builder

import (
	"reflect"
	"testing"
)

func TestStageOutputs(t *testing.T) {
	out, ren := stageOutputs([]string{"type=oci,dest=/x/img.tar", "type=local,dest=/x/dir", "type=image,name=r/x:y,push=true", "type=docker,dest=-"})
	want := []string{"type=oci,dest=/x/.img.tar.gpuimg-partial", "type=local,dest=/x/dir", "type=image,name=r/x:y,push=true", "type=docker,dest=-"}
	if !reflect.DeepEqual(out, want) || len(ren) != 1 || ren["/x/.img.tar.gpuimg-partial"] != "/x/img.tar" {
		t.Errorf("%v %v", out, ren)
	}
}
