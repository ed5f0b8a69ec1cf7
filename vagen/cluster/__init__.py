"""Scale-out: rollout workers on Ray (``cluster.backend=ray``). Import-guarded: importing this
package never imports Ray."""

from vagen.cluster.ray_rollouts import RayRollouts, RolloutWorker, init_ray, ray_available

__all__ = ["RayRollouts", "RolloutWorker", "init_ray", "ray_available"]
