package kubeapi

import (
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Velero's Deployment (apps/v1) and its Schedules, as the plugin's check reads them through a
// controller-runtime client, which finds their groups by discovery.
func TestDeploymentsAndSchedules(t *testing.T) {
	s := start(t)
	c := newClient(t, s)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "velero"}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "velero", Args: []string{"server", "--default-item-operation-timeout=8h"}}}
	s.Put(d)
	sch := &velerov1.Schedule{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "nightly"}}
	sch.Spec.Template.TTL = metav1.Duration{Duration: 48 * time.Hour}
	s.Put(sch)

	var got appsv1.Deployment
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "velero", Name: "velero"}, &got); err != nil {
		t.Fatal(err)
	}
	if cs := got.Spec.Template.Spec.Containers; len(cs) != 1 || len(cs[0].Args) != 2 || cs[0].Args[1] != "--default-item-operation-timeout=8h" {
		t.Errorf("Deployment containers %+v", cs)
	}
	var list appsv1.DeploymentList
	if err := c.List(t.Context(), &list, client.InNamespace("velero")); err != nil || len(list.Items) != 1 {
		t.Errorf("List Deployments: %d, %v", len(list.Items), err)
	}
	var schedules velerov1.ScheduleList
	if err := c.List(t.Context(), &schedules, client.InNamespace("velero")); err != nil || len(schedules.Items) != 1 ||
		schedules.Items[0].Spec.Template.TTL.Duration != sch.Spec.Template.TTL.Duration {
		t.Errorf("List Schedules: %+v, %v", schedules.Items, err)
	}
}
