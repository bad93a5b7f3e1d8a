# One BallChase env instance: an agent in a walled arena chases a drifting ball. Each is an env
# root of its own in the scene (the arena group), as godot-rl's course duplicates them.
#
# The simulation is plain arithmetic on a fixed timestep (no physics bodies), so instances
# never interact, every tick costs the same, and a seed fixes the whole ball sequence.
extends Node2D

const W := 400.0
const H := 400.0
const AGENT_R := 15.0
const BALL_R := 15.0
const MAX_SPEED := 300.0
const ACCEL := 1500.0
const DRAG := 2.0
const BALL_MAX_SPEED := 120.0
const DT := 1.0 / 60.0
const CATCH_REWARD := 1.0
const SHAPING := 0.5
const WALL_PENALTY := 0.01
const OBS_SIZE := 10
const N_ACTIONS := 9
# Discrete actions: 0 stays, 1..8 accelerate towards the compass points N, NE, E, SE, S, SW, W, NW.
const DIRS: Array[Vector2] = [
	Vector2(0, 0), Vector2(0, -1), Vector2(0.70710678, -0.70710678), Vector2(1, 0),
	Vector2(0.70710678, 0.70710678), Vector2(0, 1), Vector2(-0.70710678, 0.70710678),
	Vector2(-1, 0), Vector2(-0.70710678, -0.70710678),
]

var rng := RandomNumberGenerator.new()
var continuous := false
var episode_steps := 500
var render := false

var agent_pos := Vector2()
var agent_vel := Vector2()
var ball_pos := Vector2()
var ball_vel := Vector2()
var move := Vector2()
var steps := 0
var reward_acc := 0.0
var prev_dist := 0.0
var catches := 0
var episode := 0


func setup(seed_value: int, is_continuous: bool, ep_steps: int, with_render: bool) -> void:
	rng.seed = seed_value
	continuous = is_continuous
	episode_steps = ep_steps
	render = with_render
	reset_episode()


func reset_episode() -> void:
	agent_pos = Vector2(W * 0.5, H * 0.5)
	agent_vel = Vector2()
	move = Vector2()
	steps = 0
	reward_acc = 0.0
	catches = 0
	episode += 1
	_spawn_ball()
	if render:
		show_state()  # a game drawing every frame (eval.video) shows the new episode at once


func _spawn_ball() -> void:
	# A few tries to avoid spawning on the agent; the rng stream stays deterministic.
	for _i in range(8):
		ball_pos = Vector2(rng.randf_range(BALL_R, W - BALL_R), rng.randf_range(BALL_R, H - BALL_R))
		if ball_pos.distance_to(agent_pos) > 3.0 * (AGENT_R + BALL_R):
			break
	var angle := rng.randf() * TAU
	ball_vel = Vector2(cos(angle), sin(angle)) * rng.randf() * BALL_MAX_SPEED
	prev_dist = agent_pos.distance_to(ball_pos)


func set_action(a: Variant) -> void:
	if continuous:
		move = Vector2(float(a[0]), float(a[1]))
		if move.length_squared() > 1.0:
			move = move.normalized()
	else:
		move = DIRS[clampi(int(a), 0, N_ACTIONS - 1)]
	move *= ACCEL * DT


# Hot path: one call per instance per physics tick; kept to few GDScript operations.
func tick() -> void:
	var v := agent_vel * (1.0 - DRAG * DT) + move
	if v.length_squared() > MAX_SPEED * MAX_SPEED:
		v = v.normalized() * MAX_SPEED
	var p := agent_pos + v * DT
	var hit := false
	if p.x < AGENT_R or p.x > W - AGENT_R:
		p.x = clampf(p.x, AGENT_R, W - AGENT_R)
		v.x = 0.0
		hit = true
	if p.y < AGENT_R or p.y > H - AGENT_R:
		p.y = clampf(p.y, AGENT_R, H - AGENT_R)
		v.y = 0.0
		hit = true
	agent_vel = v
	agent_pos = p
	var b := ball_pos + ball_vel * DT
	if b.x < BALL_R or b.x > W - BALL_R:
		ball_vel.x = -ball_vel.x
		b.x = clampf(b.x, BALL_R, W - BALL_R)
	if b.y < BALL_R or b.y > H - BALL_R:
		ball_vel.y = -ball_vel.y
		b.y = clampf(b.y, BALL_R, H - BALL_R)
	ball_pos = b
	var d := p.distance_to(b)
	if d < AGENT_R + BALL_R:
		reward_acc += CATCH_REWARD
		catches += 1
		_spawn_ball()
	else:
		reward_acc += SHAPING * (prev_dist - d) / W
		prev_dist = d
	if hit:
		reward_acc -= WALL_PENALTY
	if render:
		show_state()


# Ends one agent step and returns the observation; reward, done and final_obs are left in the
# fields below. A finished episode restarts at once, so the observation is the new episode's
# first one and final_obs the last one of the episode that ended.
var reward := 0.0
var done := false
var final_obs: Array = []


# The observation comes scaled by 1e6 for the step message's fixed-point numbers.
func end_step() -> Array:
	steps += 1
	reward = reward_acc
	reward_acc = 0.0
	done = steps >= episode_steps
	if not done:
		return observe(1e6)
	final_obs = observe()
	reset_episode()
	return observe(1e6)


# Ball position and relative velocity from the agent's view, the agent's velocity, and its
# distance to the four walls (0 touching, 1 across the arena).
func observe(scale := 1.0) -> Array:
	var rel := (ball_pos - agent_pos) * (scale / W)  # W == H
	var rel_v := (ball_vel - agent_vel) * (scale / (MAX_SPEED + BALL_MAX_SPEED))
	var vel := agent_vel * (scale / MAX_SPEED)
	var wall := (agent_pos - Vector2(AGENT_R, AGENT_R)) * (scale / (W - 2.0 * AGENT_R))
	return [rel.x, rel.y, rel_v.x, rel_v.y, vel.x, vel.y, wall.x, scale - wall.x, wall.y, scale - wall.y]


# Methods below answer the protocol's "call" messages.
func get_ball_position() -> Array:
	return [ball_pos.x, ball_pos.y]


func get_catches() -> int:
	return catches


# Drawn by an engine with a display only (`render`), straight into the renderer (canvas items,
# not `_draw`, which waits for the next idle frame): the walls once, then the ball and the agent
# moved to the state. So a frame drawn on demand (sync.gd's `frame`, eval.video) shows the state
# as it is, the first one after a reset included.
var walls_item := RID()
var ball_item := RID()
var agent_item := RID()


func show_state() -> void:
	if not walls_item.is_valid():
		walls_item = _item()
		var c: Array[Vector2] = [Vector2(0, 0), Vector2(W, 0), Vector2(W, H), Vector2(0, H)]
		for k in range(4):
			RenderingServer.canvas_item_add_line(walls_item, c[k], c[(k + 1) % 4], Color(0.8, 0.8, 0.8), 4.0)
		ball_item = _item()
		RenderingServer.canvas_item_add_circle(ball_item, Vector2(), BALL_R, Color(1.0, 0.6, 0.1))
		agent_item = _item()
		RenderingServer.canvas_item_add_circle(agent_item, Vector2(), AGENT_R, Color(0.2, 0.6, 1.0))
	RenderingServer.canvas_item_set_transform(ball_item, Transform2D(0.0, ball_pos))
	RenderingServer.canvas_item_set_transform(agent_item, Transform2D(0.0, agent_pos))


func _item() -> RID:
	var item := RenderingServer.canvas_item_create()
	RenderingServer.canvas_item_set_parent(item, get_canvas_item())
	return item


func _exit_tree() -> void:
	for item: RID in [walls_item, ball_item, agent_item]:
		if item.is_valid():
			RenderingServer.free_rid(item)
