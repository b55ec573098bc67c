"""Test device plugins (NVIDIA's device plugin in its common strategies, speaking the kubelet's
device-plugin v1beta1 API for real) and a fake of the NVIDIA container toolkit's CDI spec.

- :mod:`.strategies`: the answers (Allocate, GetPreferredAllocation), pure;
- :mod:`.plugin`: the ``v1beta1.DevicePlugin`` service; :mod:`.serve`: the runnable plugin
  (``python -m tests.deviceplugins.serve --help``);
- :mod:`.toolkit_cdi`: the toolkit's spec and the plugin's own spec (``cdi-cri``);
- :mod:`.fake_kubelet`: the kubelet's ``v1beta1.Registration`` for component tests.
"""
