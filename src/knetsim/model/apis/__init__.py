"""knetsim's own definitions of the custom API groups it simulates, and the CRDs generated from them.

- ``markers``: the vocabulary (String, Int32, ListOf, MapOf, Struct, Field, Rule), and ``schema()``;
- ``meta``: the apimachinery types both groups embed (Condition, LabelSelector);
- ``gateway_v1``, ``gateway_v1beta1``, ``gateway_v1alpha2``, ``gateway_v1alpha3``: gateway.networking.k8s.io
  (Gateway API v1.6.1, standard channel);
- ``policy_v1alpha1``, ``policy_v1alpha2``: policy.networking.k8s.io (network-policy-api v0.1.8 and v0.2.0);
- ``calico_v3``, ``cilium_v2``, ``antrea_v1beta1``: the fields of Calico's, Cilium's and Antrea's kinds (rows of
  ``model.kinds``, not of the catalog: Calico's and Antrea's served only on a cluster that runs that CNI), and
  ``cni``, which finds them by group and kind;
- ``catalog``: each kind's names, scope, versions and printer columns (read at start-up, no schema built);
- ``generate``: the CustomResourceDefinition objects, built on first use.

``model.crd`` admits custom objects with these CRDs unless the input (or the live cluster) brings the kind's
own CRD, which then takes over. See README.md.
"""
