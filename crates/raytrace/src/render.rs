//! The renderer: a Whitted-style ray tracer over spheres and planes, with
//! point lights, hard shadows, mirror reflections and a checkerboard floor.
//!
//! # Determinism
//!
//! A pixel's colour depends only on the scene, the image size, the sample
//! count and the pixel's coordinates, never on which task computes it or in
//! what order. The arithmetic is `+ - * /` and `sqrt` on `f64` only — all
//! correctly rounded in IEEE 754 — so every build for an IEEE target gives
//! bit-identical pixels; `powf`, `tan` and friends (whose last bit may vary
//! between maths libraries) are avoided on purpose. Anti-aliasing uses a
//! regular sub-pixel grid, so there is no random state to share.

use std::ops::{Add, Mul, Neg, Sub};

/// A vector or point in 3-space, or an RGB colour (components in 0..1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Vec3 {
    /// x, or red.
    pub x: f64,
    /// y, or green.
    pub y: f64,
    /// z, or blue.
    pub z: f64,
}

impl Vec3 {
    /// The vector (x, y, z).
    pub const fn new(x: f64, y: f64, z: f64) -> Self {
        Self { x, y, z }
    }

    /// Dot product.
    pub fn dot(self, o: Vec3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// Cross product.
    pub fn cross(self, o: Vec3) -> Vec3 {
        Vec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }

    /// Euclidean length.
    pub fn len(self) -> f64 {
        self.dot(self).sqrt()
    }

    /// The unit vector in the same direction (the zero vector stays zero).
    pub fn unit(self) -> Vec3 {
        let l = self.len();
        if l > 0.0 {
            self * (1.0 / l)
        } else {
            self
        }
    }

    /// Component-wise product (colour filtering).
    pub fn hadamard(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x * o.x, self.y * o.y, self.z * o.z)
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for Vec3 {
    type Output = Vec3;
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f64> for Vec3 {
    type Output = Vec3;
    fn mul(self, s: f64) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}

impl Neg for Vec3 {
    type Output = Vec3;
    fn neg(self) -> Vec3 {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}

/// A half-line: origin plus unit direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ray {
    /// Where it starts.
    pub origin: Vec3,
    /// Unit direction.
    pub dir: Vec3,
}

impl Ray {
    /// The point at distance `t`.
    pub fn at(&self, t: f64) -> Vec3 {
        self.origin + self.dir * t
    }
}

/// How a surface looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Material {
    /// Diffuse colour.
    pub color: Vec3,
    /// Second colour of a checkerboard with unit squares in x and z, if
    /// any (for the floor).
    pub checker: Option<Vec3>,
    /// Weight of the diffuse term.
    pub diffuse: f64,
    /// Weight of the Phong highlight.
    pub specular: f64,
    /// Sharpness of the highlight: the cosine is squared this many times
    /// (so 5 means an exponent of 32), which keeps to exact operations.
    pub shininess_log2: u32,
    /// Fraction of the colour taken from the mirror direction (0..1).
    pub reflect: f64,
}

impl Material {
    /// A plain, slightly glossy surface of colour `color`.
    pub const fn matte(color: Vec3) -> Self {
        Self {
            color,
            checker: None,
            diffuse: 0.9,
            specular: 0.4,
            shininess_log2: 5,
            reflect: 0.0,
        }
    }

    /// The same material, reflecting fraction `r` of the mirror image.
    pub const fn reflective(self, r: f64) -> Self {
        Self { reflect: r, ..self }
    }

    fn color_at(&self, p: Vec3) -> Vec3 {
        match self.checker {
            // floor() is exact, so square parity is too.
            Some(c2) if (p.x.floor() + p.z.floor()).rem_euclid(2.0) != 0.0 => c2,
            _ => self.color,
        }
    }
}

/// A sphere.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sphere {
    /// Centre.
    pub center: Vec3,
    /// Radius.
    pub radius: f64,
    /// Surface.
    pub material: Material,
}

impl Sphere {
    /// Distance along `ray` to the nearest hit beyond `t_min`, if any.
    pub fn hit(&self, ray: &Ray, t_min: f64) -> Option<f64> {
        let oc = ray.origin - self.center;
        let b = oc.dot(ray.dir);
        let c = oc.dot(oc) - self.radius * self.radius;
        let disc = b * b - c;
        if disc < 0.0 {
            return None;
        }
        let s = disc.sqrt();
        let near = -b - s;
        if near > t_min {
            return Some(near);
        }
        let far = -b + s;
        (far > t_min).then_some(far)
    }
}

/// An infinite plane: the points p with `normal · p = offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plane {
    /// Unit normal, facing the side that is lit.
    pub normal: Vec3,
    /// Signed distance from the origin along the normal.
    pub offset: f64,
    /// Surface.
    pub material: Material,
}

impl Plane {
    /// Distance along `ray` to the hit beyond `t_min`, if any.
    pub fn hit(&self, ray: &Ray, t_min: f64) -> Option<f64> {
        let denom = self.normal.dot(ray.dir);
        if denom.abs() < 1e-12 {
            return None;
        }
        let t = (self.offset - self.normal.dot(ray.origin)) / denom;
        (t > t_min).then_some(t)
    }
}

/// A point light.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Light {
    /// Position.
    pub pos: Vec3,
    /// Colour and strength.
    pub color: Vec3,
}

/// A pinhole camera.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    /// Eye position.
    pub eye: Vec3,
    /// Point looked at.
    pub target: Vec3,
    /// Roughly up.
    pub up: Vec3,
    /// Half the height of the image plane at distance 1 (the tangent of
    /// half the vertical field of view, given directly to avoid `tan`).
    pub half_height: f64,
}

/// Everything to render.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    /// Spheres.
    pub spheres: Vec<Sphere>,
    /// Planes.
    pub planes: Vec<Plane>,
    /// Point lights.
    pub lights: Vec<Light>,
    /// Light everywhere, shadows or not.
    pub ambient: Vec3,
    /// Sky colour at the horizon.
    pub sky_horizon: Vec3,
    /// Sky colour straight up.
    pub sky_zenith: Vec3,
    /// The viewpoint.
    pub camera: Camera,
    /// Bounces of reflection followed at most.
    pub max_depth: u32,
}

/// Names of the built-in scenes, for `--scene`.
pub const SCENES: [&str; 2] = ["spheres", "grid"];

/// How far a secondary ray starts off its surface, against self-hits.
const EPS: f64 = 1e-7;

impl Scene {
    /// A built-in scene by name (see [`SCENES`]).
    pub fn by_name(name: &str) -> Option<Scene> {
        match name {
            "spheres" => Some(Self::spheres()),
            "grid" => Some(Self::grid()),
            _ => None,
        }
    }

    fn floor() -> Plane {
        Plane {
            normal: Vec3::new(0.0, 1.0, 0.0),
            offset: 0.0,
            material: Material {
                color: Vec3::new(0.92, 0.92, 0.88),
                checker: Some(Vec3::new(0.55, 0.08, 0.08)),
                diffuse: 0.9,
                specular: 0.1,
                shininess_log2: 4,
                reflect: 0.25,
            },
        }
    }

    /// A mirror ball among coloured spheres on a checkerboard, lit by two
    /// lights: the default.
    pub fn spheres() -> Scene {
        let s = |x, y, z, r, m| Sphere {
            center: Vec3::new(x, y, z),
            radius: r,
            material: m,
        };
        Scene {
            spheres: vec![
                s(
                    0.0,
                    1.0,
                    0.0,
                    1.0,
                    Material::matte(Vec3::new(0.85, 0.85, 0.9)).reflective(0.75),
                ),
                s(
                    -2.2,
                    0.7,
                    0.9,
                    0.7,
                    Material::matte(Vec3::new(0.9, 0.15, 0.12)).reflective(0.1),
                ),
                s(
                    2.1,
                    0.6,
                    0.7,
                    0.6,
                    Material::matte(Vec3::new(0.15, 0.75, 0.2)).reflective(0.1),
                ),
                s(
                    0.95,
                    0.35,
                    2.2,
                    0.35,
                    Material::matte(Vec3::new(0.15, 0.3, 0.95)).reflective(0.2),
                ),
                s(
                    -0.9,
                    0.4,
                    2.4,
                    0.4,
                    Material::matte(Vec3::new(0.95, 0.8, 0.1)).reflective(0.05),
                ),
                s(
                    -1.0,
                    1.6,
                    -3.0,
                    1.6,
                    Material::matte(Vec3::new(0.6, 0.3, 0.8)).reflective(0.3),
                ),
            ],
            planes: vec![Self::floor()],
            lights: vec![
                Light {
                    pos: Vec3::new(-5.0, 8.0, 6.0),
                    color: Vec3::new(0.8, 0.8, 0.75),
                },
                Light {
                    pos: Vec3::new(6.0, 5.0, 3.0),
                    color: Vec3::new(0.45, 0.45, 0.55),
                },
            ],
            ambient: Vec3::new(0.12, 0.12, 0.14),
            sky_horizon: Vec3::new(0.85, 0.9, 1.0),
            sky_zenith: Vec3::new(0.25, 0.45, 0.85),
            camera: Camera {
                eye: Vec3::new(0.0, 2.2, 7.0),
                target: Vec3::new(0.0, 0.8, 0.0),
                up: Vec3::new(0.0, 1.0, 0.0),
                half_height: 0.45,
            },
            max_depth: 5,
        }
    }

    /// A 5 × 5 grid of spheres, from matte to mirror, over a checkerboard:
    /// uneven cost per pixel, for load balance.
    pub fn grid() -> Scene {
        let mut spheres = Vec::with_capacity(25);
        for i in 0..5u32 {
            for j in 0..5u32 {
                let (fi, fj) = (f64::from(i), f64::from(j));
                let color = Vec3::new(0.2 + 0.15 * fi, 0.3 + 0.1 * fj, 0.9 - 0.15 * fi);
                spheres.push(Sphere {
                    center: Vec3::new(-3.0 + 1.5 * fi, 0.5, -4.0 + 1.5 * fj),
                    radius: 0.5,
                    material: Material::matte(color).reflective(0.15 * fj),
                });
            }
        }
        Scene {
            spheres,
            planes: vec![Self::floor()],
            lights: vec![
                Light {
                    pos: Vec3::new(-4.0, 7.0, 5.0),
                    color: Vec3::new(0.7, 0.7, 0.7),
                },
                Light {
                    pos: Vec3::new(5.0, 6.0, -2.0),
                    color: Vec3::new(0.4, 0.35, 0.3),
                },
            ],
            ambient: Vec3::new(0.1, 0.1, 0.12),
            sky_horizon: Vec3::new(0.9, 0.85, 0.8),
            sky_zenith: Vec3::new(0.2, 0.3, 0.6),
            camera: Camera {
                eye: Vec3::new(0.0, 4.5, 6.5),
                target: Vec3::new(0.0, 0.0, -1.0),
                up: Vec3::new(0.0, 1.0, 0.0),
                half_height: 0.5,
            },
            max_depth: 4,
        }
    }

    /// The nearest surface hit by `ray`: distance, point, unit normal
    /// facing the ray, material.
    fn nearest(&self, ray: &Ray) -> Option<(f64, Vec3, Vec3, Material)> {
        let mut best: Option<(f64, Vec3, Material)> = None;
        for s in &self.spheres {
            if let Some(t) = s.hit(ray, EPS) {
                if best.is_none_or(|b| t < b.0) {
                    let n = (ray.at(t) - s.center) * (1.0 / s.radius);
                    best = Some((t, n, s.material));
                }
            }
        }
        for p in &self.planes {
            if let Some(t) = p.hit(ray, EPS) {
                if best.is_none_or(|b| t < b.0) {
                    best = Some((t, p.normal, p.material));
                }
            }
        }
        best.map(|(t, n, m)| {
            let n = if n.dot(ray.dir) > 0.0 { -n } else { n };
            (t, ray.at(t), n, m)
        })
    }

    /// True when something lies between `p` and the light `dist` away
    /// along unit `dir`.
    fn shadowed(&self, p: Vec3, dir: Vec3, dist: f64) -> bool {
        let ray = Ray { origin: p, dir };
        self.spheres
            .iter()
            .any(|s| s.hit(&ray, EPS).is_some_and(|t| t < dist))
            || self
                .planes
                .iter()
                .any(|pl| pl.hit(&ray, EPS).is_some_and(|t| t < dist))
    }

    fn sky(&self, dir: Vec3) -> Vec3 {
        let k = dir.y.clamp(0.0, 1.0);
        self.sky_horizon * (1.0 - k) + self.sky_zenith * k
    }

    /// The colour seen along `ray` (linear, unclamped).
    pub fn trace(&self, ray: &Ray, depth: u32) -> Vec3 {
        let Some((_, p, n, m)) = self.nearest(ray) else {
            return self.sky(ray.dir);
        };
        // Lift secondary rays off the surface against acne.
        let origin = p + n * 1e-6;
        let base = m.color_at(p);
        let mut c = base.hadamard(self.ambient);
        for l in &self.lights {
            let to = l.pos - origin;
            let dist = to.len();
            let dir = to * (1.0 / dist);
            let lambert = n.dot(dir);
            if lambert <= 0.0 || self.shadowed(origin, dir, dist) {
                continue;
            }
            c = c + base.hadamard(l.color) * (m.diffuse * lambert);
            // Phong: the reflected light direction against the view.
            let r = n * (2.0 * lambert) - dir;
            let mut spec = r.dot(-ray.dir);
            if spec > 0.0 {
                for _ in 0..m.shininess_log2 {
                    spec *= spec;
                }
                c = c + l.color * (m.specular * spec);
            }
        }
        if m.reflect > 0.0 && depth < self.max_depth {
            let dir = ray.dir - n * (2.0 * ray.dir.dot(n));
            let mirror = self.trace(&Ray { origin, dir }, depth + 1);
            c = c * (1.0 - m.reflect) + mirror * m.reflect;
        }
        c
    }

    /// The primary ray through image point (`u`, `v`) for an image
    /// `width` × `height`: `u` in 0..width from the left, `v` in 0..height
    /// from the top.
    pub fn primary_ray(&self, u: f64, v: f64, width: u32, height: u32) -> Ray {
        let cam = &self.camera;
        let forward = (cam.target - cam.eye).unit();
        let right = forward.cross(cam.up).unit();
        let up = right.cross(forward);
        let (w, h) = (f64::from(width), f64::from(height));
        let half_w = cam.half_height * w / h;
        let sx = (2.0 * u / w - 1.0) * half_w;
        let sy = (1.0 - 2.0 * v / h) * cam.half_height;
        Ray {
            origin: cam.eye,
            dir: (forward + right * sx + up * sy).unit(),
        }
    }

    /// The 8-bit RGB colour of pixel (`x`, `y`) of a `width` × `height`
    /// image, averaging `samples` × `samples` rays on a regular sub-pixel
    /// grid.
    pub fn pixel(&self, x: u32, y: u32, width: u32, height: u32, samples: u32) -> [u8; 3] {
        let samples = samples.max(1);
        let s = f64::from(samples);
        let mut sum = Vec3::default();
        for i in 0..samples {
            for j in 0..samples {
                let u = f64::from(x) + (f64::from(j) + 0.5) / s;
                let v = f64::from(y) + (f64::from(i) + 0.5) / s;
                sum = sum + self.trace(&self.primary_ray(u, v, width, height), 0);
            }
        }
        let c = sum * (1.0 / (s * s));
        [to_u8(c.x), to_u8(c.y), to_u8(c.z)]
    }
}

/// Linear 0..1 to 8 bits with gamma 2 (a square root: exact, unlike powf).
fn to_u8(c: f64) -> u8 {
    (c.clamp(0.0, 1.0).sqrt() * 255.0 + 0.5) as u8
}

/// What to render: a scene at a size and sampling.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// The scene.
    pub scene: Scene,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Rays per pixel along each axis (1 = no anti-aliasing).
    pub samples: u32,
}

impl Image {
    /// Pixels in the image.
    pub fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Renders the pixels from index `first` (row-major, 0 is the top-left
    /// corner) into `out`, 3 bytes (R, G, B) each; `out.len() / 3` pixels,
    /// which must lie inside the image.
    pub fn render_span(&self, first: u64, out: &mut [u8]) {
        let w = u64::from(self.width);
        for (i, px) in out.chunks_exact_mut(3).enumerate() {
            let p = first + i as u64;
            let (x, y) = ((p % w) as u32, (p / w) as u32);
            px.copy_from_slice(
                &self
                    .scene
                    .pixel(x, y, self.width, self.height, self.samples),
            );
        }
    }

    /// The whole image in one go, RGB8 row-major: the single-task
    /// reference.
    pub fn render(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.pixels() as usize * 3];
        self.render_span(0, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn vector_algebra() {
        let a = Vec3::new(1.0, 2.0, 3.0);
        let b = Vec3::new(-2.0, 0.5, 4.0);
        assert_eq!(a + b, Vec3::new(-1.0, 2.5, 7.0));
        assert_eq!(a - b, Vec3::new(3.0, 1.5, -1.0));
        assert_eq!(a.dot(b), -2.0 + 1.0 + 12.0);
        let c = a.cross(b);
        assert!(close(c.dot(a), 0.0) && close(c.dot(b), 0.0));
        assert!(close(Vec3::new(3.0, 4.0, 12.0).len(), 13.0));
        assert!(close(b.unit().len(), 1.0));
        assert_eq!(Vec3::default().unit(), Vec3::default());
    }

    #[test]
    fn sphere_hits_near_side_then_far_side() {
        let s = Sphere {
            center: Vec3::new(0.0, 0.0, -5.0),
            radius: 1.0,
            material: Material::matte(Vec3::new(1.0, 1.0, 1.0)),
        };
        let ray = Ray {
            origin: Vec3::default(),
            dir: Vec3::new(0.0, 0.0, -1.0),
        };
        assert!(close(s.hit(&ray, EPS).unwrap_or(f64::NAN), 4.0));
        // From inside, the far side.
        let inside = Ray {
            origin: Vec3::new(0.0, 0.0, -5.0),
            ..ray
        };
        assert!(close(s.hit(&inside, EPS).unwrap_or(f64::NAN), 1.0));
        // Behind the origin, or off to the side: no hit.
        assert_eq!(
            s.hit(
                &Ray {
                    dir: -ray.dir,
                    ..ray
                },
                EPS
            ),
            None
        );
        let aside = Ray {
            origin: Vec3::new(2.0, 0.0, 0.0),
            ..ray
        };
        assert_eq!(s.hit(&aside, EPS), None);
    }

    #[test]
    fn plane_hits_from_above_only_forward() {
        let p = Scene::floor();
        let down = Ray {
            origin: Vec3::new(0.0, 2.0, 0.0),
            dir: Vec3::new(0.0, -1.0, 0.0),
        };
        assert!(close(p.hit(&down, EPS).unwrap_or(f64::NAN), 2.0));
        assert_eq!(
            p.hit(
                &Ray {
                    dir: -down.dir,
                    ..down
                },
                EPS
            ),
            None
        );
        let level = Ray {
            dir: Vec3::new(1.0, 0.0, 0.0),
            ..down
        };
        assert_eq!(p.hit(&level, EPS), None);
    }

    #[test]
    fn checkerboard_alternates() {
        let m = Scene::floor().material;
        let a = m.color_at(Vec3::new(0.5, 0.0, 0.5));
        let b = m.color_at(Vec3::new(1.5, 0.0, 0.5));
        let c = m.color_at(Vec3::new(-0.5, 0.0, 0.5));
        let d = m.color_at(Vec3::new(-0.5, 0.0, -0.5));
        assert_ne!(a, b);
        assert_eq!(b, c);
        assert_eq!(a, d);
    }

    #[test]
    fn shadows_darken_the_floor_under_a_ball() {
        let scene = Scene {
            spheres: vec![Sphere {
                center: Vec3::new(0.0, 1.0, 0.0),
                radius: 0.5,
                material: Material::matte(Vec3::new(1.0, 1.0, 1.0)),
            }],
            lights: vec![Light {
                pos: Vec3::new(0.0, 10.0, 0.0),
                color: Vec3::new(1.0, 1.0, 1.0),
            }],
            ..Scene::spheres()
        };
        let down = |x: f64| Ray {
            origin: Vec3::new(x + 0.25, 0.2, 0.25),
            dir: Vec3::new(0.0, -1.0, 0.0),
        };
        // Same checker square, one point under the ball, one in the open.
        let shaded = scene.trace(&down(0.0), scene.max_depth);
        let lit = scene.trace(&down(2.0), scene.max_depth);
        assert!(shaded.x < lit.x && shaded.y < lit.y && shaded.z < lit.z);
    }

    #[test]
    fn a_mirror_reflects_what_is_in_front_of_it() {
        let red = Material::matte(Vec3::new(1.0, 0.0, 0.0));
        let scene = Scene {
            spheres: vec![
                Sphere {
                    center: Vec3::new(0.0, 5.0, -10.0),
                    radius: 2.0,
                    material: Material {
                        color: Vec3::default(),
                        specular: 0.0,
                        reflect: 1.0,
                        ..red
                    },
                },
                // Behind the camera, seen only in the mirror.
                Sphere {
                    center: Vec3::new(0.0, 5.0, 10.0),
                    radius: 3.0,
                    material: red,
                },
            ],
            planes: vec![],
            ..Scene::spheres()
        };
        let ray = Ray {
            origin: Vec3::new(0.0, 5.0, 0.0),
            dir: Vec3::new(0.0, 0.0, -1.0),
        };
        let c = scene.trace(&ray, 0);
        assert!(c.x > 0.1 && c.y < 1e-6 && c.z < 1e-6, "{c:?}");
    }

    #[test]
    fn primary_rays_span_the_view() {
        let s = Scene::spheres();
        let centre = s.primary_ray(320.0, 240.0, 640, 480);
        let forward = (s.camera.target - s.camera.eye).unit();
        assert!(close(centre.dir.dot(forward), 1.0));
        let top_left = s.primary_ray(0.0, 0.0, 640, 480);
        let bottom_right = s.primary_ray(640.0, 480.0, 640, 480);
        assert!(top_left.dir.y > centre.dir.y && bottom_right.dir.y < centre.dir.y);
        assert!(top_left.dir.x < 0.0 && bottom_right.dir.x > 0.0);
    }

    #[test]
    fn spans_match_the_whole_image_in_any_order() {
        let img = Image {
            scene: Scene::spheres(),
            width: 37,
            height: 23,
            samples: 2,
        };
        let whole = img.render();
        // Odd-sized spans, rendered backwards.
        let mut pieces = vec![0u8; whole.len()];
        let n = img.pixels();
        let step = 13u64;
        let mut first = (n - 1) / step * step;
        loop {
            let end = (first + step).min(n);
            img.render_span(first, &mut pieces[first as usize * 3..end as usize * 3]);
            if first == 0 {
                break;
            }
            first -= step;
        }
        assert_eq!(whole, pieces);
    }

    #[test]
    fn the_image_is_not_blank() {
        for name in SCENES {
            let img = Image {
                scene: Scene::by_name(name).expect("built-in scene"),
                width: 32,
                height: 24,
                samples: 1,
            };
            let px = img.render();
            let distinct: std::collections::HashSet<_> = px.chunks(3).collect();
            assert!(distinct.len() > 20, "{name}: {} colours", distinct.len());
        }
        assert_eq!(Scene::by_name("teapot"), None);
    }
}
